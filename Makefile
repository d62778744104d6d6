# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Entry points: make (build into build/), make test, make demo, make bench,
# make install (into $(PREFIX), never over the system's libibverbs).
BUILD   ?= build
PREFIX  ?= /usr/local/lib/softverbs
JOBS    ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build deps test demo bench install clean asan tsan clang \
	format format-check fuzz dist deb

all: build

deps:
	@scripts/deps.sh build

# Warnings as errors (CMake's SV_WERROR, README "Warnings"): make test and
# the asan, tsan, clang and fuzz targets set WERROR=ON, and a build tree
# keeps its setting until WERROR says otherwise; a new tree built by plain
# make (make demo, make install) reports warnings without failing.
# WERROR=ON or WERROR=OFF on the command line decides for any target.
test: WERROR ?= ON
sv_werror = $(if $(WERROR),-DSV_WERROR=$(WERROR))

$(BUILD)/CMakeCache.txt:
	@scripts/deps.sh build
	cmake -S . -B $(BUILD) $(sv_werror) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	$(if $(WERROR),@grep -qx 'SV_WERROR:BOOL=$(WERROR)' $(BUILD)/CMakeCache.txt || \
		cmake -S . -B $(BUILD) $(sv_werror) >/dev/null)
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

# LINKDIR: where links to the command and its man pages go, so that
# `softverbs` is on PATH and `man softverbs` finds its page (the default
# prefix links into /usr/local; LINKDIR= makes no links, and a line says
# what to add to PATH).  Only the installed targets are built, not the tests.
LINKDIR ?= $(if $(filter /usr/local/lib/softverbs,$(PREFIX)),/usr/local)
install: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target installables
	cmake --install $(BUILD) --prefix $(PREFIX)
	@scripts/install-links.sh "$(PREFIX)" "$(LINKDIR)"

# Release artifacts in $(DIST) (scripts/package.sh): a relocatable tarball
# to unpack anywhere, and a Debian package installing beside the
# distribution's libibverbs1.  Each builds only the installed targets.
DIST ?= dist
dist deb: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target installables
	@scripts/package.sh $@ $(BUILD) $(DIST)

# Sanitizer builds live in their own trees so they never mix with build/.
# Both check the lock order at run time too (SV_LOCKCHECK, util/lockorder.h).
# make tsan leaves out the udp variants of the integration tests: under TSan
# the UDP path (every packet's ICRC and copies instrumented) is slow enough
# that round trips reach the QPs' ACK timeout (its 100 ms floor), and the
# timed cases fail on that slowness (rc_messenger's SENDs take longer than
# its 5 s stall bound) rather than on a wake-up that did not come.
asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DSV_SANITIZE=address,undefined -DSV_LOCKCHECK=ON"
tsan:
	$(MAKE) test BUILD=build-tsan CMAKE_FLAGS="-DSV_SANITIZE=thread -DSV_LOCKCHECK=ON" CTEST_ARGS="$(or $(TSAN_CTEST_ARGS),-L 'unit|integration' -LE udp)"
# The whole tree built by clang (the project's -Werror flags: clang's
# warnings differ from gcc's), then the unit tests on that build.  deps
# first: configuring needs clang installed.
clang:
	@scripts/deps.sh test
	$(MAKE) test BUILD=build-clang CMAKE_FLAGS="-DCMAKE_C_COMPILER=clang" CTEST_ARGS="$(or $(CLANG_CTEST_ARGS),-L unit)"

# libFuzzer harnesses (fuzz/), built by clang with ASan+UBSan in
# build-fuzz, each run for FUZZ_SECONDS (default 60); non-zero exit on any
# finding (scripts/fuzz.sh).
fuzz:
	@scripts/deps.sh test
	@JOBS=$(JOBS) SV_WERROR=$(or $(WERROR),ON) scripts/fuzz.sh

# clang-format (.clang-format, clang-format 14) over src/ and tests/:
# format rewrites the files, format-check only lists those that differ.
format:
	@scripts/format.sh fix
format-check:
	@scripts/format.sh check

clean:
	rm -rf $(BUILD) build-asan build-tsan build-clang build-fuzz
