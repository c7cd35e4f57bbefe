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
# promisectl, started afresh for every step of a script, is linked at a fixed
# address (not PIE): the loader then has ~900 relative relocations to apply
# instead of ~78,000, 0.9 ms of a 4.4 ms `promisectl get`. Its own code loses
# address randomisation (libraries, heap and stack keep it); the long-lived
# daemon stays PIE.
CTL_LINK     := -Xlinker -no-pie
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
	$(SWIFT) build $(RELEASE) $(CTL_LINK) --product promisectl

# `swift run` takes no --static-swift-stdlib: the binary is started from where the build put it.
run: release
	"$$($(SWIFT) build $(RELEASE) --show-bin-path)/promised" $(if $(SOCKET),--socket $(SOCKET))

# Both binaries, promisectl's completions for bash, zsh and fish, and a systemd
# user unit for the daemon (`systemctl --user enable --now promised`).
install: release
	scripts/install.sh "$$($(SWIFT) build $(RELEASE) --show-bin-path)" "$(DESTDIR)" "$(PREFIX)"

# The whole suite, then the core and RPC unit tests again under ThreadSanitizer.
test: deps test-debug test-tsan

test-debug:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The core's lock is built on atomics that TSan sees (not on
# Synchronization.Mutex, which it cannot see on Linux), so a report here
# means a real race.
test-tsan:
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path $(TSAN_SCRATCH)
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --skip-build --sanitize=thread \
		--scratch-path $(TSAN_SCRATCH) --filter 'PromiseTests|PromiseRPCTests'

# Release-built benchmarks; writes bench/results.json and bench/results.md.
bench: deps
	scripts/bench.sh

clean:
	rm -rf .build $(TSAN_SCRATCH)
