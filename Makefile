# railcoll: `make run` (the main job) and `make test` (every test) on a fresh
# Debian machine. Both install what is missing first (scripts/install-deps.sh).
BUILD ?= build
PREFIX ?= /usr/local
RAILCOLL = $(BUILD)/bin/railcoll

.PHONY: deps build run test install clean

deps:
	@./scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD)

# The main job (scripts/main-job.sh): the verifier sweep, then every all-gather
# algorithm against Open MPI on the emulated 4x4-rank, 2-rail cluster; results/.
run: build
	./scripts/main-job.sh

test: build
	cd $(BUILD) && ctest --output-on-failure -j2

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
