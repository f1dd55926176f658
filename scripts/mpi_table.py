#!/usr/bin/env python3
"""docs/mpi.md's per-call table, made from what was built and what was tested.

Every MPI collective (MPI 4.0 chapters 6 and 7) in each of its forms (blocking,
nonblocking, persistent, and the large-count `_c` twin of each), and for each
MPI the layer is built for:

* whether the MPI has the call at all (its library's dynamic symbols),
* whether the layer takes it (the layer's own symbols: an entry point the
  layer defines is served when the call qualifies -- docs/mpi.md, "What it
  serves" -- and any other goes to MPI untouched), and
* which test program checked its bytes with the call served: the reports the
  layer printed in the last `tests/mpi/test_mpi_layer.sh BUILD local ABI` run
  (BUILD/mpi-served/ABI.log: the calls railcoll served in each passing check),
  and, for the `_c` forms, which the report counts with their int forms, the
  test programs that call them by name.

usage: mpi_table.py BUILD_DIR [--write docs/mpi.md]
Without --write the table goes to stdout; with it, it replaces the text
between the markers in the file.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN = "<!-- mpi_table.py: begin -->"
END = "<!-- mpi_table.py: end -->"

# MPI 4.0's collective operations (§6.3-6.11, §6.12-6.13, §7.6-7.7), by family.
COLLECTIVES = ["Barrier", "Bcast", "Gather", "Gatherv", "Scatter", "Scatterv", "Allgather", "Allgatherv",
               "Alltoall", "Alltoallv", "Alltoallw", "Reduce", "Allreduce", "Reduce_scatter_block",
               "Reduce_scatter", "Scan", "Exscan"]
NEIGHBOURHOOD = ["Neighbor_allgather", "Neighbor_allgatherv", "Neighbor_alltoall", "Neighbor_alltoallv",
                 "Neighbor_alltoallw"]
# Why a family's calls stay MPI's, in a word (docs/mpi.md, "Every MPI
# collective" and "Known limits", gives the reasons).
LEFT_TO_MPI = {
    "Reduce_local": "local",
    "Neighbor_": "neighbourhood",
    "Gatherv": "known limit",
    "Scatterv": "known limit",
    "Allgatherv": "known limit",
}

ABIS = [("openmpi", "Open MPI", "lib/librailcoll_mpi.so"), ("mpich", "MPICH", "lib/mpich/librailcoll_mpi.so")]


def symbols(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def mpi_library(layer):
    """The MPI library the layer was linked against (ldd)."""
    out = subprocess.run(["ldd", layer], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*(libmpi\.so\S*|libmpich\.so\S*) => (\S+)", line)
        if m:
            return m.group(2)
    sys.exit(f"mpi_table.py: {layer} names no MPI library")


def forms(family):
    """(form, C names it may have) of one family: MPI-4's names, and Open MPI
    4's MPIX_..._init for the persistent ones."""
    if family == "Reduce_local":
        return [("blocking", ["MPI_Reduce_local"]), ("blocking _c", ["MPI_Reduce_local_c"])]
    i = "I" + family[0].lower() + family[1:]
    rows = [("blocking", [f"MPI_{family}"]), ("nonblocking", [f"MPI_{i}"]),
            ("persistent", [f"MPI_{family}_init", f"MPIX_{family}_init"])]
    if family != "Barrier":  # the only collective without a count
        rows += [("blocking _c", [f"MPI_{family}_c"]), ("nonblocking _c", [f"MPI_{i}_c"]),
                 ("persistent _c", [f"MPI_{family}_init_c"])]
    return rows


def served_log(build, abi):
    """The reports of the passing checks of the last local run of
    test_mpi_layer.sh (BUILD/mpi-served/ABI.log: a line per rank and call,
    program, call, railcoll=N, mpi=M, the reasons): ({C name of a served call:
    test programs whose passing checks served it}, [(calls served, calls passed
    to MPI, reasons)]) or None when there is no log."""
    proofs, counts = {}, []
    path = os.path.join(build, "mpi-served", abi + ".log")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 4:
                continue
            prog, name, served, to_mpi = fields[0], fields[1], int(fields[2]), int(fields[3])
            if served:
                proofs.setdefault(name, set()).add(prog)
            counts.append((served, to_mpi, fields[4] if len(fields) > 4 else ""))
    return proofs, counts


def served_share(title, counts):
    """One sentence: the share of the collective calls our test programs made
    (with the report on, every rank's calls counted) that railcoll served, and
    why the others went to MPI."""
    served = sum(s for s, _, _ in counts)
    to_mpi = sum(m for _, m, _ in counts)
    if not served + to_mpi:
        return f"{title}: no calls in the log."
    reasons = {}
    for _, _, why in counts:
        for part in filter(None, (p.strip() for p in why.split(","))):
            text, _, n = part.rpartition(" ")
            reasons[text] = reasons.get(text, 0) + int(n)
    asked = reasons.get("not in RAILCOLL_MPI_COLLS", 0)
    line = (f"{title}: railcoll served {served} of the {served + to_mpi} MPI collective calls our test programs "
            f"made ({100 * served / (served + to_mpi):.1f} %)")
    if to_mpi:
        line += "; to MPI: " + ", ".join(f"{n} {text}" for text, n in sorted(reasons.items(), key=lambda r: -r[1]))
    if asked:
        rest = served + to_mpi - asked
        line += (f"; leaving out the {asked} that checks send to MPI on purpose, "
                 f"{100 * served / rest:.1f} %")
    return line + "."


def large_count_callers():
    """{MPI_..._c: test programs calling it by name} (the report counts a _c
    call with its int form)."""
    callers = {}
    src = os.path.join(ROOT, "tests", "mpi")
    for name in sorted(os.listdir(src)):
        if not name.endswith(".c"):
            continue
        with open(os.path.join(src, name)) as f:
            text = f.read()
        for call in set(re.findall(r"\b(MPI_\w+_c)\s*\(", text)):
            callers.setdefault(call, set()).add(os.path.splitext(name)[0])
    return callers


def cell(names, layer_syms, mpi_syms, proofs, callers, large):
    present = [n for n in names if n in mpi_syms]
    if not present:
        return "not in this MPI", ""
    name = present[0]
    if name not in layer_syms:
        return "MPI", ""
    if large:
        proved = callers.get(name, set())
    else:
        # The report names the persistent form MPI_<Family>_init whatever its C name.
        report = re.sub(r"^MPIX_", "MPI_", name)
        proved = (proofs or {}).get(report, set())
    return "railcoll", ", ".join(sorted(fold_bindings(proved)))


def fold_bindings(programs):
    """fortran_collectives_mpif, _mpi and _f08 as one entry when all three are there."""
    fortran = {p for p in programs if p.startswith("fortran_collectives_")}
    if len(fortran) < 3:
        return programs
    return (set(programs) - fortran) | {"fortran_collectives (3 bindings)"}


def table(build):
    callers = large_count_callers()
    abis = []
    for abi, title, lib in ABIS:
        layer = os.path.join(build, lib)
        if not os.path.exists(layer):
            continue
        abis.append((abi, title, symbols(layer), symbols(mpi_library(layer)), served_log(build, abi)))
    logs = {abi: log for abi, *_, log in abis}
    if not abis:
        sys.exit(f"mpi_table.py: no librailcoll_mpi.so under {build}")
    head = "| collective | form |"
    rule = "|---|---|"
    for abi, title, *_ in abis:
        head += f" {title} | tested served ({title}) |"
        rule += "---|---|"
    lines = [head, rule]
    served = total = 0
    for family in COLLECTIVES + ["Reduce_local"] + NEIGHBOURHOOD:
        why = next((w for k, w in LEFT_TO_MPI.items() if family.startswith(k) or family == k), "")
        for form, names in forms(family):
            row = f"| `MPI_{family}` | {form} |"
            for abi, title, layer_syms, mpi_syms, log in abis:
                proofs = log[0] if log else None
                where, proved = cell(names, layer_syms, mpi_syms, proofs, callers, form.endswith("_c"))
                if where == "MPI" and why:
                    where = f"MPI ({why})"
                if where != "not in this MPI":
                    total += 1
                    served += where == "railcoll"
                if where == "railcoll" and not proved:
                    proved = "**none**"
                row += f" {where} | {proved} |"
            lines.append(row)
    missing = [title for abi, title, *_, log in abis if log is None]
    notes = [f"{served} of the {total} calls the MPIs have are railcoll's (both MPIs counted)."]
    shares = [served_share(title, logs[abi][1]) for abi, title, *_ in abis if logs[abi]]
    if missing:
        notes.append("No test log for " + ", ".join(missing) + ": run `tests/mpi/test_mpi_layer.sh "
                     "BUILD local ABI` first; its tested columns are empty.")
    text = "\n".join(lines) + "\n\n" + " ".join(notes) + "\n"
    if shares:
        text += ("\nThe share of the collective calls our own test programs made that railcoll served "
                 "(every rank's calls, a persistent call counted once, at its `_init`; from the reports "
                 "of the passing checks of the last local run):\n\n" + "\n".join("* " + s for s in shares) + "\n")
    return text


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    build = os.path.abspath(args[0])
    text = table(build)
    if len(args) >= 3 and args[1] == "--write":
        path = args[2]
        with open(path) as f:
            doc = f.read()
        if BEGIN not in doc or END not in doc:
            sys.exit(f"mpi_table.py: {path} lacks the markers {BEGIN} ... {END}")
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(path, "w") as f:
            f.write(head + BEGIN + "\n" + text + END + tail)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
