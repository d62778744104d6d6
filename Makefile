# Entry points: make (build into build/), make test, make demo, make bench,
# make install (into $(PREFIX), never over the system's libibverbs).
BUILD   ?= build
PREFIX  ?= /usr/local/lib/softverbs
JOBS    ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build deps test demo bench install clean asan tsan

all: build

deps:
	@scripts/deps.sh build

$(BUILD)/CMakeCache.txt:
	@scripts/deps.sh build
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	@scripts/deps.sh test
	cd $(BUILD) && ctest --output-on-failure --timeout 300 $(CTEST_ARGS)

demo: build
	@scripts/deps.sh demo
	@scripts/demo.sh $(BUILD)

bench: build
	@scripts/deps.sh bench
	@bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Sanitizer builds live in their own trees so they never mix with build/.
asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DSV_SANITIZE=address,undefined"
tsan:
	$(MAKE) test BUILD=build-tsan CMAKE_FLAGS="-DSV_SANITIZE=thread" CTEST_ARGS="$(or $(TSAN_CTEST_ARGS),-L 'unit|integration' -LE udp)"

clean:
	rm -rf $(BUILD) build-asan build-tsan
