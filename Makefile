# One entry point for people and CI. `make run` starts the daemon; `make test`
# runs every test; both install what is missing first (see README.md).

SWIFT        ?= swift
SOCKET       ?=
TSAN_SCRATCH ?= .build-tsan
PREFIX       ?= /usr/local
DESTDIR      ?=
# Release binaries carry the Swift standard library and Foundation inside them:
# no libswiftCore.so and friends to find and relocate at every start (one
# `promisectl get` costs a few ms less), and nothing to install beside them.
RELEASE      := -c release --static-swift-stdlib
# promisectl, started afresh for every step of a script, is linked fully
# static (-static-executable): no dynamic loader, no libc or libstdc++ to map
# and relocate at each start (docs/PERFORMANCE.md, "promisectl start-up").
# Its code sits at a fixed address (heap and stack keep their randomisation).
# The long-lived daemon stays as it is. The link prints glibc's warnings
# about functions in Foundation's static libraries (getpwnam, dlopen,
# mktemp): called, they need the same glibc at run time, true of a binary
# built on the machine it runs on, as `make install` does; copy it elsewhere
# only to the same Debian release. The flag changes the compiler's command
# line, so promisectl is built in a scratch folder of its own: sharing
# .build, each build would recompile everything the other built.
CTL_SCRATCH  := .build-static
CTL_RELEASE  := $(RELEASE) --scratch-path $(CTL_SCRATCH)
# Generic types built at run time are looked up by mangled name by default,
# and each lookup checks the type's requirements with a scan of every
# protocol conformance in the binary. This frontend flag has the compiler
# call each type's metadata accessor instead, handing it the conformances it
# already knows, at the price of a slightly larger binary.
CTL_LINK     := -Xswiftc -static-executable \
		-Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
# Debian packages the build and tests need: libuv for the daemon, SQLite for its store, pkg-config to
# find them, socat for the tests that talk to the socket as another user (ProtocolErrorTests).
APT_PACKAGES := libuv1-dev libsqlite3-dev pkg-config socat

.PHONY: deps build release run install test test-debug test-tsan bench clean

deps:
	@scripts/install-deps.sh $(APT_PACKAGES)

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build $(RELEASE) --product promised
	$(SWIFT) build $(CTL_RELEASE) $(CTL_LINK) --product promisectl

# `swift run` takes no --static-swift-stdlib: the binary is started from where the build put it.
run: release
	"$$($(SWIFT) build $(RELEASE) --show-bin-path)/promised" $(if $(SOCKET),--socket $(SOCKET))

# Both binaries, promisectl's completions for bash, zsh and fish, and a systemd
# user unit for the daemon (`systemctl --user enable --now promised`).
install: release
	scripts/install.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)" "$(DESTDIR)" "$(PREFIX)" \
		"$$($(SWIFT) build $(CTL_RELEASE) --show-bin-path)"

# The whole suite, then the unit tests but the SQLite store's again under ThreadSanitizer.
test: deps test-debug test-tsan

# End-to-end tests run apart: they block threads of Swift's cooperative pool
# (two on a 2-core machine) while they wait for processes and sockets, and
# the core's async tests, sharing the process, then wait minutes for a
# thread of their own.
# The example package that SwiftClientExampleTests builds and runs is built
# first: built from nothing inside the end-to-end run, it took both cores for
# minutes and the other tests' timeouts ran out.
test-debug:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip EndToEndTests
	$(SWIFT) build --package-path examples/swift-client --scratch-path .build/examples-swift-client --product RemotePipeline
	$(SWIFT) test --skip-build --filter EndToEndTests

# The core's lock is built on atomics that TSan sees (not on
# Synchronization.Mutex, which it cannot see on Linux), so a report here
# means a real race. Every unit test target runs but PromiseSQLiteStoreTests;
# the end-to-end tests do not.
TSAN_TARGETS := PromiseTests|PromiseJSONTests|PromiseModelTests|PromiseRPCTests|PromiseClientTests|PromiseStoreTests|PromiseRegistryTests|PromiseDispatchTests|PromiseServerTests
test-tsan:
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path $(TSAN_SCRATCH)
	PROMISE_TESTS_UNDER_TSAN=1 TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --sanitize=thread \
		--scratch-path $(TSAN_SCRATCH) --filter '^($(TSAN_TARGETS))\.'

# Release-built benchmarks; writes bench/results.json and bench/results.md.
bench: deps
	scripts/bench.sh

clean:
	rm -rf .build $(TSAN_SCRATCH) $(CTL_SCRATCH)
