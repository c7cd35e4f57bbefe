import Foundation
import PromiseTestSupport
import Testing

/// Deterministic simulation of the daemon in process (issue 22, item 11;
/// after Resonate's deterministic simulation tests and TigerBeetle's VOPR):
/// seeded random steps from several clients against the real dispatcher,
/// registry, group commit and SQLite store, with clean and crash restarts
/// in between. After every step, every answer is valid JSON-RPC 2.0 within
/// the line limit and consistent with what was acknowledged; after every
/// restart, the store loads, the registry restores, and every acknowledged
/// change is there, unchanged. See SimulationModel.swift for every check.
///
/// Replay a failure with the line it prints (`SIMULATION_SEED=… swift test
/// --filter Simulation`); run longer with `SIMULATION_SEEDS`/`SIMULATION_STEPS`
/// or scripts/simulation-soak.sh.
@Suite("Simulation of the registry over the SQLite store")
struct SimulationTests {
    /// The CI seed set: 20 seeds from this base, 200 steps each.
    static let baseSeed: UInt64 = 0x5113_0022
    static let ciSeeds = 20
    static let ciSteps = 200

    @Test("seeded random requests from several clients, with clean and crash restarts, keep every acknowledged change and answer valid JSON-RPC")
    func seededRunsKeepEveryAcknowledgedChange() async {
        let seeds = SimulationOptions.seeds(base: Self.baseSeed, count: Self.ciSeeds)
        let steps = SimulationOptions.steps(Self.ciSteps)
        let started = ContinuousClock.now
        // Two workers on threads of their own: seconds of CPU work must not
        // hold the cooperative pool the other tests share.
        let halves = [seeds.enumerated().filter { $0.offset % 2 == 0 }.map(\.element),
                      seeds.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)]
        async let first = Self.onOwnThread { Self.run(halves[0], steps: steps) }
        async let second = Self.onOwnThread { Self.run(halves[1], steps: steps) }
        let summaries = (await first + second).sorted { $0.seed < $1.seed }
        let elapsed = ContinuousClock.now - started
        for summary in summaries {
            print("Simulation seed \(summary.seed): \(summary.failures.isEmpty ? "ok" : "FAILED"), "
                + "\(summary.steps) steps, \(summary.requests) requests, \(summary.messages) messages checked, "
                + "\(summary.cleanRestarts) clean and \(summary.crashRestarts) crash restarts, "
                + "\(summary.promisesAtEnd) promises at the end, largest store \(summary.largestStoreBytes / 1024) KiB, "
                + "longest step \(summary.longestStep), longest turn \(summary.longestTurn), in \(summary.elapsed)")
        }
        let failures = summaries.flatMap(\.failures)
        print("Simulation: \(summaries.count) seeds × \(steps) steps in \(elapsed), \(failures.count) failed")
        #expect(failures.isEmpty, "\(failures.count) seeds failed:\n\(failures.joined(separator: "\n\n"))")
        #expect(summaries.reduce(0) { $0 + $1.cleanRestarts + $1.crashRestarts } > 0 || steps < 50)
    }

    @Test("a seed replays the same run: the same requests, messages, restarts and promises")
    func aSeedReplaysTheSameRun() async {
        let runs = await Self.onOwnThread {
            (0..<2).map { _ in SimulationRun(options: SimulationOptions(seed: Self.baseSeed &+ 4, steps: 120)).run() }
        }
        #expect(runs[0].failures.isEmpty && runs[1].failures.isEmpty, "\(runs.flatMap(\.failures))")
        #expect(runs[0].requests == runs[1].requests)
        #expect(runs[0].messages == runs[1].messages)
        #expect(runs[0].cleanRestarts == runs[1].cleanRestarts && runs[0].crashRestarts == runs[1].crashRestarts)
        #expect(runs[0].promisesAtEnd == runs[1].promisesAtEnd)
    }

    @Test("hostile shapes (combinator chains thousands long with timeouts, fan-ins over one id repeated thousands of times, batches of heavy reads), with clean and crash restarts, keep every acknowledged change within the stall bound")
    func hostileShapesKeepEveryAcknowledgedChange() async {
        let seeds = SimulationOptions.seeds(base: Self.hostileBaseSeed, count: Self.hostileSeeds)
        let steps = SimulationOptions.steps(Self.hostileSteps)
        // A thread's usual 8 MiB of stack: a walk that recursed once per link would overflow it.
        let summaries = await Self.onOwnThread(stackSize: 8 << 20) {
            seeds.map { SimulationRun(options: SimulationOptions(seed: $0, steps: steps, profile: .hostile)).run() }
        }
        for summary in summaries {
            print("Simulation (hostile) seed \(summary.seed): \(summary.failures.isEmpty ? "ok" : "FAILED"), "
                + "\(summary.steps) steps, \(summary.requests) requests, longest combinator chain "
                + "\(summary.longestCombinatorChain), \(summary.cleanRestarts) clean and \(summary.crashRestarts) crash "
                + "restarts, longest step \(summary.longestStep), longest turn \(summary.longestTurn), in \(summary.elapsed)")
        }
        let failures = summaries.flatMap(\.failures)
        #expect(failures.isEmpty, "\(failures.count) seeds failed:\n\(failures.joined(separator: "\n\n"))")
        if steps >= Self.hostileSteps {
            #expect(summaries.map(\.longestCombinatorChain).max() ?? 0 >= 6_000)
        }
    }

    /// The hostile profile's CI seeds: enough steps for a chain past the
    /// ~6,000 links that once overflowed the stack.
    static let hostileBaseSeed: UInt64 = 0x5113_0037
    static let hostileSeeds = 2
    static let hostileSteps = 60

    static func run(_ seeds: [UInt64], steps: Int) -> [SimulationRun.Summary] {
        seeds.map { seed in SimulationRun(options: SimulationOptions(seed: seed, steps: steps)).run() }
    }

    static func onOwnThread(
        stackSize: Int = 16 << 20, _ body: @escaping @Sendable () -> [SimulationRun.Summary]
    ) async -> [SimulationRun.Summary] {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: body()) }
            thread.stackSize = stackSize
            thread.start()
        }
    }
}
