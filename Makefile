# railcoll: `make run` (the main job) and `make test` (every test) on a fresh
# Debian machine. Both install what is missing first (scripts/install-deps.sh).
BUILD ?= build
PREFIX ?= /usr/local
RAILCOLL = $(BUILD)/bin/railcoll

.PHONY: deps build run test install clean bcast-vs-nodes sanitize soak fuzz

deps:
	@./scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD)

# The main job (scripts/main-job.sh): the verifier sweep, then every collective
# against Open MPI and oneCCL on the emulated 4x4-rank, 2-rail cluster, at the
# rate this machine can feed and at 1 Gbit/s; results/. FULL=1: the full sweep.
# LOCAL=1: on local processes instead, only when asked.
run: build
	./scripts/main-job.sh $(if $(LOCAL),--local)

# Broadcast latency and bandwidth on 2, 4 and 8 emulated nodes (root).
bcast-vs-nodes: build
	./scripts/bcast-vs-nodes.sh

# Three tests at a time on 2 cores: the multi-process tests spend much of their
# time waiting (deadlines, shaped links, start-up), 0.6-1 core each measured
# (torch_local 0.8, ofi_local 0.6, mpi_layer_local_mpich 1.0), so two left a
# core idle; the cluster tests still take turns (RESOURCE_LOCK) and the
# timing-sensitive ones run alone (RUN_SERIAL).
test: build
	cd $(BUILD) && ctest --output-on-failure -j3

# The multi-process suite (local and, as root, on the emulated cluster) under
# AddressSanitizer and UndefinedBehaviorSanitizer, in build-asan; then the
# threads under ThreadSanitizer, in build-tsan: the request engine and the
# progress thread (the executor and communicators on threads, the C API's
# nonblocking calls with a thread waiting while another posts, on two
# communicators), and the MPI layer at MPI_THREAD_MULTIPLE under both MPIs
# (mpi_layer_threads). Any report fails the test that saw it.
SAN_TESTS = Auth|Store|DirectPlan|Wire|Executor|CommOutOfBand|capi|multiprocess_local|more_collectives_local|communicators_local|auth_strangers|peer_failure_local|soak_local
TSAN_TESTS = Executor|RailSockets|SpinBudget|CommOutOfBand|ReduceOps|oob_capi|capi|nonblocking_local|mpi_layer_threads|torch_threads
sanitize: deps
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAILCOLL_SANITIZE=address,undefined >/dev/null
	@cmake --build build-asan
	cd build-asan && ctest --output-on-failure -R '$(SAN_TESTS)'
	cd build-asan && flock /tmp/railcoll-cluster.lock env RAILCOLL_CLUSTER_LOCKED=make ctest --output-on-failure -R 'multiprocess_cluster|rail_failover_cluster'
	@cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAILCOLL_SANITIZE=thread >/dev/null
	@cmake --build build-tsan --target tsan_programs
	cd build-tsan && ctest --output-on-failure -j2 -R '$(TSAN_TESTS)'

# 10,000 mixed, validated calls on the emulated cluster; files and memory compared.
soak: build
	./scripts/soak.sh $(BUILD) 10000

# The wire fuzzer for 10 minutes; MERGE=1 keeps what it found in tests/fuzz/corpus.
fuzz: build
	./tests/fuzz/run_fuzz.sh $(BUILD)/fuzz/fuzz_wire 600

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
