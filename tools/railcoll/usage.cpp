#include "usage.hpp"

namespace railcoll::cli {

namespace {

struct Verb {
  const char* name;
  const char* summary;  // the entry in `railcoll --help`
  const char* usage;    // `railcoll VERB --help`
};

const Verb kVerbs[] = {
    {"algos",
     "  algos [--json | --rules]            list collectives and algorithms, or the selection rules in force\n",
     "usage: railcoll algos [--json | --rules [--markdown]]\n"
     "\n"
     "Every collective and its algorithms, one line each: name, summary, source.\n"
     "  --json      the same as a JSON list (collective, algorithm, summary, cost, source, options)\n"
     "  --rules     the selection rules in force (defaults, RAILCOLL_TUNING file, RAILCOLL_<COLL>_ALGO)\n"
     "              and where each came from (docs/selection.md); --markdown as a table\n"},
    {"report",
     "  report results DIR... [--into FILE] the current results table (docs/results.md) from bench records\n",
     "usage: railcoll report results DIR... [--into FILE]\n"
     "\n"
     "The table docs/results.md opens with: one section per DIR (a regime: the faithful\n"
     "cluster, the 1 Gbit/s one), each a table of every collective x size with railcoll's\n"
     "busbw (auto) and its share of the binding bound, every peer's, and the best peer's\n"
     "time over railcoll's. A DIR holds the JSON files of `railcoll bench --json` (written\n"
     "with their context) and optionally a NOTE (how and when they were measured).\n"
     "--into FILE replaces the table between its markers in FILE (or puts it after the\n"
     "first heading); without it the table goes to stdout. scripts/results.sh measures\n"
     "both regimes and calls this.\n"},
    {"doctor",
     "  doctor DIR                          which ranks are behind, where, and what they wait for (flight records)\n",
     "usage: railcoll doctor DIR\n"
     "\n"
     "Reads every rank's flight record in DIR (flight-<comm>-rank<R>.txt, written by the\n"
     "runtime when a call fails, on SIGUSR1, and at the end with RAILCOLL_FLIGHT_DIR) and says\n"
     "per communicator: the ranks without a record, the first call the ranks disagree on,\n"
     "the last call and who reached it, the ranks behind or late, what the others wait\n"
     "for (op, step, peer, rail), the timeouts' likely cause, and the likely culprit\n"
     "(docs/observability.md).\n"},
    {"trace",
     "  trace DIR [--png FILE] | trace --compare MEASURED SIMULATED [--png FILE]\n"
     "                                      merge the ranks' traces, sum them up, draw a timeline\n",
     "usage: railcoll trace DIR [--png FILE] [--call N]\n"
     "       railcoll trace --compare MEASURED SIMULATED [--png FILE] [--call N]\n"
     "\n"
     "Merges the trace-event files of every rank in DIR (RAILCOLL_TRACE=DIR, or\n"
     "railcoll sim --trace DIR) into DIR/trace.json (open it in ui.perfetto.dev), prints\n"
     "the time per rail, per step kind and per rank and the straggler of the slowest\n"
     "call, and draws DIR/trace.png: ranks by time, the rails' utilisation, the\n"
     "critical path of the slowest call (--call N: that call). --compare puts a measured\n"
     "and a simulated trace of one call side by side. Drawn by scripts/plot_trace.py\n"
     "(matplotlib).\n"},
    {"tune",
     "  tune [-o FILE] [--collectives C,C] [bench options] | sim tune --preset P [-o FILE] ...\n"
     "                                      measure (or simulate) every algorithm into a tuning file\n",
     "usage: railcoll tune [-o FILE] [--collectives C,C] [-m MIN:MAX] [-i N] [-x N] [--local] [-n N] [--ppn P] [--rails K]\n"
     "       railcoll sim tune --preset P [-o FILE] [--collectives C,C] [-m MIN:MAX] [--ranks N --ppn P --rails K]\n"
     "\n"
     "Runs every algorithm of each collective (railcoll bench --algo all on this cluster, or the\n"
     "simulator on a preset) and writes the fastest per size as a tuning file for RAILCOLL_TUNING\n"
     "(docs/selection.md).\n"},
    {"show",
     "  show COLL --algo A --ranks N [--ppn P | --nodes 4,4,5 | --node-map 0,1,0,1]\n"
     "       [--rails K] [--bytes B] [--stripe-threshold B] [--concurrency C] [--root R] [--json]\n"
     "                                      print the schedule of an algorithm\n",
     "usage: railcoll show COLL --algo A (--ranks N [--ppn P] | --nodes 4,4,5 | --node-map 0,1,0,1)\n"
     "                     [--rails K] [--bytes B | --counts C,C,...] [--stripe-threshold B] [--concurrency C]\n"
     "                     [--root R] [--dtype T] [--op O] [--json]\n"
     "\n"
     "Prints every rank's program of the algorithm's schedule, step by step, then the\n"
     "totals (steps, messages, bytes per rank, node and rail); --json as JSON.\n"
     "  --ranks N --ppn P   N ranks, P per node (the last node may be short)\n"
     "  --nodes 4,4,5       ranks per node;  --node-map 0,1,0,1: the node of every rank\n"
     "  --rails K           rails per node (the papers' k ports)\n"
     "  --bytes B           bytes per rank (4K, 1M work; alltoall: per pair of ranks)\n"
     "  --counts C,C,...    bytes of every rank (allgather, gatherv, scatterv), or N x N\n"
     "                      bytes per pair of ranks, row = source (alltoallv)\n"
     "  --stripe-threshold B  split messages above B over the rails (default 1K)\n"
     "  --concurrency C     concurrent_exchange's concurrency index (default k)\n"
     "  --root R            the root of bcast, gather(v), scatter(v) and reduce\n"
     "  --bytes B           of reduce_scatter(_block): the block each rank ends with\n"
     "  --dtype T, --op O   reductions (default float sum): T int8|uint8|int16|uint16|int32|\n"
     "                      uint32|int64|uint64|float16|bfloat16|float|double|float_int|\n"
     "                      double_int|long_int|2int|short_int, O sum|min|max|prod|band|bor|\n"
     "                      bxor|land|lor|lxor|minloc|maxloc (bitwise, logical: integers;\n"
     "                      minloc, maxloc: the (value, index) pairs)\n"},
    {"verify",
     "  verify --all                        verify every algorithm over the sweep\n"
     "  verify COLL --algo A --ranks N ...  verify one case (same options as show)\n",
     "usage: railcoll verify --all\n"
     "       railcoll verify COLL --algo A (--ranks N [--ppn P] | --nodes ... | --node-map ...) [options]\n"
     "\n"
     "Runs the symbolic verifier: --all over every algorithm and the sweep of topologies\n"
     "and sizes (ends with \"N passed, N failed\"); or one case, with the options of show.\n"},
    {"run",
     "  run -n N [--ppn P | --layout 2,3,1] [--rails K] [--tag-output] -- PROG ARGS\n"
     "                                      start N ranks here (pretend nodes with --ppn/--layout)\n",
     "usage: railcoll run -n N [--ppn P | --layout 2,3,1] [--rails K] [--timeout S] [--grace S]\n"
     "                    [--tag-output] -- PROG ARGS...\n"
     "\n"
     "The local launcher: ranks of a job as processes on this machine.\n"
     "  -n N, --np N     ranks (without --ppn/--layout: one node, the real hostname)\n"
     "  --ppn P          pretend nodes of P ranks (the last one holds the rest), shared\n"
     "                   memory inside, loopback sockets between\n"
     "  --layout 2,3,1   pretend nodes with these numbers of ranks (-n may be left out)\n"
     "  --rails K        K loopback addresses (127.0.0.1..K) as rails (default 1)\n"
     "  --timeout S      end the job after S seconds, exit 124 (default 0: no limit)\n"
     "  --grace S        after a rank fails, let the others run S more seconds before\n"
     "                   they are ended (default 0: at once); for jobs whose survivors recover\n"
     "  --tag-output     \"[rank] \" before every line of output\n"
     "Output comes a whole line at a time; only rank 0 reads stdin. When the job fails,\n"
     "the first rank to fail and every rank's status are printed on stderr, and the exit\n"
     "status is the failed rank's.\n"},
    {"bench",
     "  bench COLL [--algo A|all|auto] [-m MIN:MAX] [-i N] [-x N]\n"
     "        [-f] [-c] [--mpi] [--peer mpi,oneccl] [--rounds R] [--background complement|uniform|hotspot]\n"
     "        [--json F] [--csv F] [--plot F] [-n N] [--ppn P | --layout 5,5,3] [--rails K] [--local]\n"
     "        [--fault rail-down@T[:D] | flap@T:D[:P] | kill@T] [--nonblocking | --persistent]\n"
     "                                      OSU-style benchmark, side by side with Open MPI\n"
     "  bench --torch all_reduce[,broadcast,...] [-m MIN:MAX] [--json F] [--ppn P] [--call-cost] [--local]\n"
     "                                      the same torch program over gloo and railcoll (docs/torch.md)\n"
     "  bench --reduce [-m MIN:MAX] [--rounds N]\n"
     "                                      the reduction kernels' GB/s per type and kernel set (this process)\n",
     "usage: railcoll bench COLL [options]\n"
     "\n"
     "OSU-style benchmark of a collective on the emulated cluster (railcoll cluster up), or\n"
     "with --local on local processes in pretend nodes; neither: it refuses and says how to\n"
     "get one. Side by side with Open MPI (--mpi). COLL is one of\n"
     "railcoll algos' collectives (allgather, barrier, bcast, gather, allreduce,\n"
     "reduce_scatter_block, reduce_scatter, reduce); reductions sum floats, and the size of\n"
     "a reduce-scatter is the block each rank ends with.\n"
     "  --algo A|all|auto   one algorithm, every one then auto (default all), or auto;\n"
     "                      A,B,...: these, side by side (with --rounds, alternated)\n"
     "  -m MIN:MAX          sizes in bytes per rank, doubling (default 8:1M; K, M, G suffixes);\n"
     "                      --factor F: each F times the last instead (16:1M --factor 4: 9 sizes)\n"
     "                      alltoall(v): bytes each rank sends to each other rank\n"
     "  -i N, -x N          timed and warm-up calls per size (default 100 and 10;\n"
     "                      barrier 10000 and 100); large sizes run fewer\n"
     "  -f                  full statistics: min, max, iterations\n"
     "  -c                  validate every byte of every call (outside the timed calls)\n"
     "  --mpi               also Open MPI's tuned and HAN collectives on the same ranks, and railcoll\n"
     "                      through the MPI layer in the same program (--peer mpi,mpi-layer)\n"
     "  --peer mpi,oneccl   the peers on the same ranks: mpi (Open MPI's tuned and HAN), oneccl (Intel\n"
     "                      oneCCL, railcoll-oneccl-bench: each setting of --oneccl-settings tried, the\n"
     "                      best at each size reported as \"oneccl\"), mpi-layer (mpi:railcoll)\n"
     "  --oneccl-settings S oneCCL settings to try, comma-separated, or all (default w1,w2-mnic):\n"
     "                      w1 ATL ofi/tcp, 1 sleeping worker; w2-mnic 2 workers, one rail each\n"
     "                      (CCL_MNIC); w1-spin 1 spinning worker; w1-shm libfabric shm inside a node\n"
     "  --rounds R          like for like: railcoll and each peer run R times, alternating, each\n"
     "                      round timing its share of every size's calls after its own warm-up;\n"
     "                      records pool the calls (default 1). Every table has algbw and busbw\n"
     "                      (nccl-tests), the summaries the rail and compute bounds and which binds\n"
     "  --idle-us N         rest before every timed call, both sides alike (default: on the\n"
     "                      cluster the time its shaped rails take to refill their burst;\n"
     "                      0: back to back, a barrier between calls, as OSU times them)\n"
     "  --skew US           each rank enters each call after a random 0..US us (after the\n"
     "                      barrier), as an application's imbalance does; both sides alike\n"
     "  --timeline F        append every rank's entry into and exit from every timed call to F\n"
     "                      (one line per rank and call, us from the size's first entry)\n"
     "  --background P      run again under complement|uniform|hotspot traffic on every rail\n"
     "                      (cluster only) and compare quiet and loaded\n"
     "  --transport T       tcp (native sockets), ofi (libfabric) or both, side by side with their ratio;\n"
     "                      default: RAILCOLL_TRANSPORT (tcp). Records carry transport and provider\n"
     "  --nonblocking       OSU's nonblocking benchmark (osu_iallgather...): railcoll_iCOLL + railcoll_wait\n"
     "                      alternating with the blocking call, then post, a busy loop as long as\n"
     "                      post + wait took (no railcoll call in it), wait: blocking and nonblocking\n"
     "                      latency, compute, overall, overlap %; with --mpi, MPI_Iallgather... (Open\n"
     "                      MPI's libnbc) on the same ranks. --algo defaults to auto\n"
     "  --persistent        the same with railcoll_start + railcoll_wait of one railcoll_COLL_init request\n"
     "  --json F, --csv F   write the records; --plot F: latency vs size (PNG or SVG)\n"
     "  -n N                ranks; with --ppn P (default: the cluster's, locally N) in nodes\n"
     "                      of P, the last one holding the rest (-n 13 --ppn 5: 5,5,3)\n"
     "  --layout 5,5,3      ranks per node\n"
     "  --rails K           rails to use (default: all of the cluster's, locally 2)\n"
     "  --local             local processes in pretend nodes (needed when no cluster is up)\n"
     "  --timeout S         seconds each job may take (default 3600)\n"
     "  --fault rail-down@T[:D] | flap@T:D[:P] | kill@T\n"
     "                      all-gathers while node 1's last rail loses its link T s in (for D s,\n"
     "                      default T), or flaps from T s in for D s (down, up, ... every P s,\n"
     "                      default 0.2), or the last rank is killed: throughput before/during/\n"
     "                      after and per second, every survivor's error (cluster only; with\n"
     "                      -m MAX, --algo, --json)\n"
     "Tables: median and p90/p99 of the slowest rank's time per call, and the span (first\n"
     "rank in to last rank out) when all ranks share this host's clock; the summary of\n"
     "bcast and gather compares spans (docs/results.md, \"How to read\"). Own p50/p90/p99\n"
     "and >3x p50: over every rank's own time of every call (OSU -z), the calls slower than\n"
     "3x that median; a second summary compares the mean of each rank's own time (OSU's\n"
     "Avg Latency) and these tails with Open MPI's.\n"},
    {"sim",
     "  sim COLL --preset P [--algo A|all|auto] [-m MIN:MAX] [--root R]\n"
     "        [--ranks N --ppn P --rails K] [--nic-memory] [--background complement|uniform|hotspot\n"
     "        [--background-bytes B] [--seed S] [--samples K]] [--json F] [--csv F] [--plot F]\n"
     "        [--trace DIR]\n"
     "                                      the same tables, simulated on a model of a machine\n"
     "  sim presets                         list the machine models\n"
     "  sim reproduce seed001|seed002|seed003|seed004|all [--json F] [--plot-dir D]\n"
     "                                      the seeds' results beside the model's\n",
     "usage: railcoll sim COLL --preset P [--algo A|all|auto]\n"
     "                    [-m MIN:MAX] [--root R] [--ranks N --ppn P --rails K] [--nic-memory]\n"
     "                    [--stripe-threshold B] [--concurrency C]\n"
     "                    [--background complement|uniform|hotspot [--background-bytes B]\n"
     "                    [--seed S] [--samples K]] [--json F] [--csv F] [--plot F] [--trace DIR]\n"
     "       railcoll sim presets\n"
     "       railcoll sim reproduce seed001|seed002|seed003|seed004|all [--json F] [--plot-dir D]\n"
     "\n"
     "The tables of railcoll bench, simulated on a model of a machine (docs/simulator.md);\n"
     "presets lists the models; reproduce sets the seeds' results beside the model's.\n"
     "--trace DIR (one algorithm, one size) writes the modeled call as RAILCOLL_TRACE does,\n"
     "DIR/trace-sim-rank<R>.json: railcoll trace DIR draws it, railcoll trace --compare\n"
     "MEASURED DIR sets it beside a measured one (docs/observability.md).\n"},
    {"goal",
     "  goal export COLL --algo A --ranks N ... [-o FILE]   a schedule as LogGOPSim GOAL text\n"
     "  goal import FILE [--rails K] [--preset P]         read GOAL (and simulate it)\n",
     "usage: railcoll goal export COLL --algo A (--ranks N [--ppn P] | --nodes ...) [--rails K]\n"
     "                            [--bytes B] [-o FILE]\n"
     "       railcoll goal import FILE [--rails K] [--preset P]\n"
     "\n"
     "Schedules in LogGOPSim's GOAL text format (docs/goal.md): export one, or import one\n"
     "and, with --preset, simulate it.\n"},
    {"calibrate",
     "  calibrate [-o presets/testbed.preset] [--quick] [--local]   measure this cluster into a preset\n"
     "  calibrate --compare SIM.json BENCH.json                       simulated vs measured: error, fastest\n",
     "usage: railcoll calibrate [--nodes-from-cluster] [-o FILE] [--local] [--quick] [-n N] [--ppn P] [--rails K]\n"
     "       railcoll calibrate --compare SIM.json BENCH.json [BENCH2.json ...]\n"
     "\n"
     "Measures the emulated cluster (or, with --local, local processes) into a simulator\n"
     "preset; --compare sets\n"
     "simulated records beside measured ones (docs/calibration.md).\n"},
    {"cluster",
     "  cluster up|status|down|ceiling|run|mpirun|torchrun|slurm   the emulated multi-rail cluster (railcoll cluster --help)\n",
     "usage: railcoll cluster <verb> [options]\n"
     "\n"
     "  up [--nodes M] [--ppn P] [--rails K] [--rate R|auto] [--shaper bucket|wire] [--slurm]\n"
     "        create M nodes (network namespaces rc-n0..) with K rails each, every\n"
     "        rail shaped to R in both directions (defaults 4, 4, 2, 1gbit; R in\n"
     "        tc syntax: 1gbit, 500mbit, 100mbps). --rate auto: the highest rate this\n"
     "        machine can feed, found as `ceiling` finds it (about a minute), and kept\n"
     "        in the cluster's description and every bench record. Needs root.\n"
     "        --shaper: bucket (default; a rail idle for a moment passes 1 ms at R, at\n"
     "        least 128 KiB, at memory speed) or wire (two frames: no message faster\n"
     "        than R, as on a wire; costs CPU to cut packets into frames)\n"
     "        --slurm: Slurm too\n"
     "  ceiling [--bytes B] [--calls N] [--repeats R] [--target PCT] [--start R] [--low R]\n"
     "      [--high R] [--rates R,R,...] [--json F] [--plot F] [--set]\n"
     "        on the cluster that is up: the share of the rail bound a plain TCP\n"
     "        all-to-all (railcoll-tcp-alltoall, in the cluster's nodes x ranks x rails)\n"
     "        reaches, from --start (400mbit) doubling while it reaches --target (95)\n"
     "        or halving until it does, within --low..--high (50mbit..10gbit), then\n"
     "        bisected 3 times; R runs of N calls (3, 6) per rate, B bytes per pair\n"
     "        (default: a rail carries the larger of 1 MiB and 40 ms at the rate). Prints\n"
     "        the curve, the highest rate that reaches the target (when none does, the\n"
     "        knee: the highest within 5 points of the best), how long it took;\n"
     "        --json/--plot write the curve; --rates measures those rates instead of\n"
     "        searching (the whole curve); the rails get their rate back unless --set\n"
     "        keeps the one found\n"
     "  slurm up|down|status\n"
     "        Debian's Slurm on the cluster: slurmctld here, a slurmd in every node\n"
     "        (P CPUs, partition 'rails'), munge; then SLURM_CONF=/run/railcoll/slurm/\n"
     "        slurm.conf srun --mpi=pmix|pmi2 ..., sbatch ... (`down` stops it too)\n"
     "  status                             the configuration and each node's health\n"
     "                                     (exit 0 healthy, 1 partly there, 3 none)\n"
     "  down                               remove everything (Slurm, a half-made cluster)\n"
     "  run [--ppn P | --layout 2,3,1] [--rails K] [--timeout S] [--grace S] [--tag-output]\n"
     "      -- PROG ARGS...\n"
     "        run a railcoll job: node-major ranks, RAILCOLL_* environment; output a\n"
     "        whole line at a time (--tag-output: \"[rank] \" first), stdin to rank 0;\n"
     "        when a rank fails the others are ended (after --grace S seconds) and\n"
     "        every rank's status is printed\n"
     "  mpirun [--ppn P | --layout 2,3,1] [--rails K] [--han | --railcoll] [--mpi openmpi|mpich]\n"
     "      [--timeout S] [--verbose] -- PROG ARGS...\n"
     "        run an MPI program across the nodes with Open MPI's mpirun or MPICH's Hydra\n"
     "        (--mpi; default: the MPI the program was built with). --han: Open MPI's\n"
     "        hierarchical collectives; --railcoll: railcoll's, by preloading\n"
     "        librailcoll_mpi.so, with a job key and the caller's RAILCOLL_* (docs/mpi.md)\n"
     "  torchrun [--nproc-per-node P] [--nodes M] [--rails K] [--torchrun PATH] [--timeout S]\n"
     "      -- SCRIPT.py ARGS...\n"
     "        run a torch.distributed program: one torchrun agent per node (the first M,\n"
     "        default all) starting P processes (default the cluster's ppn), rendezvous\n"
     "        at node 0's rail-0 address, the caller's RAILCOLL_*, a job key and the\n"
     "        cluster's rails forwarded (docs/torch.md)\n"
     "\n"
     "--timeout is in seconds (default 600, 0 = none). Addresses: rail r of node i\n"
     "is 198.18.r.(i+1)/24, the root namespace has 198.18.r.254 on bridge rcbr<r>.\n"},
    {"info",
     "  info [--rails SPEC] [--provider NAME]   rails, transports, the libfabric provider and domain per rail\n"
     "  info --settings [--markdown]   every RAILCOLL_* setting, its value here and where it came from\n",
     "usage: railcoll info [--rails SPEC] [--provider NAME]\n"
     "       railcoll info --settings [--markdown]\n"
     "\n"
     "What the runtime finds on this machine: the rails' addresses (RAILCOLL_RAILS or\n"
     "--rails), the transport RAILCOLL_TRANSPORT selects (tcp, the default, or ofi), and\n"
     "for each rail the libfabric provider, fabric, domain and memory-registration mode\n"
     "the ofi transport would open on its address (RAILCOLL_OFI_PROVIDER or --provider;\n"
     "default: the first libfabric offers). On the emulated cluster, per node:\n"
     "  railcoll cluster run --ppn 1 -- railcoll info\n"
     "Exit status 1 when a rail has no usable provider.\n"
     "\n"
     "--settings: every RAILCOLL_* setting (src/core/settings.cpp): its value in this\n"
     "environment, where it came from (default, environment), the code that reads it\n"
     "and what it means; RAILCOLL_* variables that name no setting are listed last.\n"
     "Exit status 1 when a value is wrong. --markdown: the table of docs/settings.md.\n"},
    {"traffic",
     "  traffic --pattern complement|uniform|hotspot [--seconds T]   background load (one rank per node)\n",
     "usage: railcoll traffic --pattern complement|uniform|hotspot [--seconds T]\n"
     "\n"
     "Background traffic (seed 004 §5), run as the ranks of a job, one per node:\n"
     "  railcoll cluster run --ppn 1 -- railcoll traffic --pattern uniform --seconds 60\n"
     "Every rank streams 64 KiB writes over every rail: to node M-1-i (complement), to\n"
     "a node drawn at random for every write (uniform), or all to node 0 (hotspot).\n"
     "It stops after T seconds (default 60) or on SIGTERM, and prints what it sent.\n"
     "`railcoll bench --background P` starts and stops it around a run.\n"},
};

}  // namespace

const char* verb_usage(const std::string& verb) {
  for (const Verb& v : kVerbs)
    if (verb == v.name) return v.usage;
  return nullptr;
}

std::string top_usage() {
  std::string s = "usage: railcoll <command> [options]   (railcoll <command> --help: its options)\n\ncommands:\n";
  for (const Verb& v : kVerbs) s += v.summary;
  s += "\nSizes take K, M, G suffixes (powers of 1024). Exit status: 0 ok, 1 a check\n"
       "failed, 2 bad usage. railcoll --version prints the version.\n";
  return s;
}

}  // namespace railcoll::cli
