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

# A paper schedule (seed 000 Figure 4: Bruck, 9 processes, 2 ports), then the
# verifier over every algorithm and the whole topology sweep.
run: build
	$(RAILCOLL) show allgather --algo bruck --ranks 9 --rails 2
	$(RAILCOLL) verify --all

test: build
	cd $(BUILD) && ctest --output-on-failure -j2

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
