# One entry point for people and CI. `make run` starts the daemon; `make test`
# runs every test; both install what is missing first (see README.md).

SWIFT        ?= swift
SOCKET       ?=
TSAN_SCRATCH ?= .build-tsan
# Debian packages the build and tests need: libuv for the daemon, SQLite for its store, pkg-config to
# find them, socat for the tests that talk to the socket as another user (ProtocolErrorTests).
APT_PACKAGES := libuv1-dev libsqlite3-dev pkg-config socat

.PHONY: deps build release run test test-debug test-tsan bench clean

deps:
	@scripts/install-deps.sh $(APT_PACKAGES)

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product promised
	$(SWIFT) build -c release --product promisectl

run: release
	$(SWIFT) run -c release --skip-build promised $(if $(SOCKET),--socket $(SOCKET))

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
