import Foundation
import PromiseTestSupport
import Testing

/// The simulation of issue 22, item 11, against the real `promised` over its
/// socket, with its SQLite store: the generator and the model of the
/// in-process simulation (Tests/PromiseSQLiteStoreTests/Simulation*.swift,
/// linked here), clients on real connections, clean (SIGTERM) and kill -9
/// restarts. Besides the model's checks: the daemon starts again every time
/// and exits 0 on SIGTERM; no answer takes longer than 2 s, neither to a
/// simulated client nor to a probe that asks `info` every 20 ms on a
/// connection of its own (the stall bound); its resident memory stays under
/// 512 MiB.
///
/// CI runs three seeds of 200 steps; `SIMULATION_SEED`, `SIMULATION_SEEDS`
/// and `SIMULATION_STEPS` replay or extend it (`VARIANT=daemon
/// scripts/simulation-soak.sh 10m`).
@Suite("Simulation of the daemon over its socket", .serialized)
struct SimulationDaemonTests {
    static let baseSeed: UInt64 = 0xD5113_0022
    static let ciSeeds = 3
    static let ciSteps = 200

    @Test("seeded random requests from several clients, with SIGTERM and kill -9 restarts, keep every acknowledged change and no answer stalls")
    func seededRunsAgainstTheDaemon() async {
        let seeds = SimulationOptions.seeds(base: Self.baseSeed, count: Self.ciSeeds)
        let steps = SimulationOptions.steps(Self.ciSteps)
        let started = ContinuousClock.now
        let summaries = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: seeds.map { seed in
                    SimulationDaemonRun(options: SimulationOptions(seed: seed, steps: steps)).run()
                })
            }
            thread.stackSize = 16 << 20
            thread.start()
        }
        for summary in summaries {
            print("SimulationDaemon seed \(summary.seed): \(summary.failures.isEmpty ? "ok" : "FAILED"), "
                + "\(summary.steps) steps, \(summary.requests) requests, \(summary.cleanRestarts) clean and "
                + "\(summary.crashRestarts) kill -9 restarts, longest answer \(summary.longestAnswer), "
                + "\(summary.probeSamples) probes (longest \(summary.longestProbe)), largest RSS \(summary.largestRSSKiB) KiB")
        }
        let failures = summaries.flatMap(\.failures)
        print("SimulationDaemon: \(summaries.count) seeds × \(steps) steps in \(ContinuousClock.now - started), \(failures.count) failed")
        #expect(failures.isEmpty, "\(failures.count) seeds failed:\n\(failures.joined(separator: "\n\n"))")
    }

    @Test("hostile shapes over the socket (combinator chains thousands long, repeated fan-ins, heavy read batches, connection floods, subscribers that never read), with restarts, keep every acknowledged change and no answer stalls")
    func hostileShapesAgainstTheDaemon() async {
        let seeds = SimulationOptions.seeds(base: Self.baseSeed ^ 0x37, count: 1)
        let steps = SimulationOptions.steps(60)
        let summaries = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: seeds.map { seed in
                    SimulationDaemonRun(options: SimulationOptions(seed: seed, steps: steps, profile: .hostile)).run()
                })
            }
            thread.stackSize = 16 << 20
            thread.start()
        }
        for summary in summaries {
            print("SimulationDaemon (hostile) seed \(summary.seed): \(summary.failures.isEmpty ? "ok" : "FAILED"), "
                + "\(summary.steps) steps, longest combinator chain \(summary.longestCombinatorChain), "
                + "\(summary.hostileSteps) steps with hostile traffic (\(summary.connectionsFlooded) connections flooded, "
                + "\(summary.progressSentToSilentReaders) progress messages to silent readers), "
                + "\(summary.cleanRestarts) clean and \(summary.crashRestarts) kill -9 restarts, longest answer "
                + "\(summary.longestAnswer), longest probe \(summary.longestProbe), largest RSS \(summary.largestRSSKiB) KiB")
        }
        let failures = summaries.flatMap(\.failures)
        #expect(failures.isEmpty, "\(failures.count) seeds failed:\n\(failures.joined(separator: "\n\n"))")
        #expect(summaries.allSatisfy { $0.hostileSteps > 0 } || steps < 20)
    }
}
