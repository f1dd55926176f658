# railcoll: `make run` (the main job) and `make test` (every test) on a fresh
# Debian machine. Both install what is missing first (scripts/install-deps.sh).
BUILD ?= build
PREFIX ?= /usr/local
RAILCOLL = $(BUILD)/bin/railcoll

.PHONY: deps build run test install clean bcast-vs-nodes

deps:
	@./scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD)

# The main job (scripts/main-job.sh): the verifier sweep, then every all-gather
# algorithm against Open MPI on the emulated 4x4-rank, 2-rail cluster; results/.
run: build
	./scripts/main-job.sh

# Broadcast latency and bandwidth on 2, 4 and 8 emulated nodes (root).
bcast-vs-nodes: build
	./scripts/bcast-vs-nodes.sh

test: build
	cd $(BUILD) && ctest --output-on-failure -j2

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
