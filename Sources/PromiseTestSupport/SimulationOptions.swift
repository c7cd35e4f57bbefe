import Foundation
import PromiseModel
import PromiseRPC

/// Defects that the simulation found, each named with the operation mix
/// that reaches it. All are fixed, and none is avoided by default: while a
/// defect is listed
/// in ``SimulationOptions/avoiding``, the generator does not make its mix, so
/// that the CI seed set passes until the fix is merged. The checks that
/// catch them are always on. `SIMULATION_AVOID=<rawValue>,…` avoids some
/// again; `SIMULATION_INCLUDE=<rawValue>,…` (or `all`) includes them.
package enum KnownDefect: String, CaseIterable, Sendable {
    /// An `any` chain over ~128 links wraps a reason nested past the
    /// parser's 512 levels, which a store must still load. Avoided: reasons
    /// nested by more than 40 `any`/`all-errors` links.
    case deepAnyReasons = "deep-any-reasons"
    /// A combinator over large and duplicated inputs makes a value (and
    /// every answer carrying it) as large as the sum of its inputs, which
    /// must stay bounded. Avoided: combinators whose value could pass half
    /// of `maxAnswerBytes`.
    case unboundedCombinatorValues = "unbounded-combinator-values"
    /// Retention (or `forget`) must not drop a settled input that a pending
    /// combinator still needs, or a restart cannot rebuild the combinator.
    /// Avoided: combinators in runs with retention, and `forget` of any
    /// combinator's input.
    case retentionDropsCombinatorInputs = "retention-drops-combinator-inputs"
    /// Ids are compared byte for byte, not by canonical equivalence:
    /// `"e\u{301}"` and `"\u{E9}"` are two ids. Avoided: creating an id
    /// canonically equivalent to an existing one.
    case canonicallyEquivalentIDs = "canonically-equivalent-ids"
    /// A `list` page over large values must stay within the answer's bound
    /// however high its `limit`. Avoided: `list` limits above 5 (included:
    /// 100 to 1,000, half of them of fulfilled promises).
    case unboundedListPages = "unbounded-list-pages"
    /// SIGTERM while a connection that created a pending `lease: true`
    /// promise is still open: closing the connection at shutdown must not
    /// make a change the journal cuts after the registry is gone
    /// (SimulationFindingsTests replays it alone). Avoided (daemon variant):
    /// the clients close their connections before each SIGTERM.
    case leaseOpenAtStop = "lease-open-at-stop"
    /// A chain of hundreds of `then` children over a large value must store
    /// and answer that value once, not a copy per child. Avoided: chains
    /// longer than 10 links never start from a promise whose value or
    /// reason may pass 2 KB.
    case valueCopiedPerChild = "value-copied-per-child"
    /// A batch of hundreds of `list` reads, settling a chain of thousands of
    /// `any`, and a fan-in over one id repeated tens of thousands of times
    /// must not hold the loop: batches run in slices of a turn budget,
    /// fan-outs through the core go on over later turns under the loop's
    /// drain budget, and a combinator watches each distinct input once. Avoided: the mixed profile makes no
    /// fan-ins or read batches and chains of at most 400 links; the hostile
    /// profile makes read batches of at most 20 `list` calls of at most 1,000
    /// records, and long chains of `all`, `race` and `allSettled` only.
    case longTurns = "long-turns"
}

/// Which shapes the generator favours.
package enum SimulationProfile: String, Sendable {
    /// Every kind of request, a few of the heavy shapes among them.
    case mixed
    /// Mostly the shapes that can stop the daemon or hold every client:
    /// combinator chains thousands long (with timeouts and restarts), fan-ins
    /// over one id repeated thousands of times, batches of heavy reads and,
    /// in the daemon variant, connection floods and subscribers that never read.
    case hostile
}

/// What one simulation run does; everything a person may change to replay
/// or extend a run comes from the environment:
///
/// - `SIMULATION_SEED=<n|0xhex>`: run that seed alone (replay a failure);
/// - `SIMULATION_SEEDS=<n>`: how many seeds (from the CI base seed, or from `SIMULATION_SEED`);
/// - `SIMULATION_PROFILE=<mixed|hostile>`: the mix of shapes (``SimulationProfile``);
/// - `SIMULATION_STEPS=<n>`: steps per seed;
/// - `SIMULATION_TURN_MS=<n>`: the in-process bound on one turn's CPU time (``SimulationOptions/stallBound``);
/// - `SIMULATION_INCLUDE=<defect,…|all>`: stop avoiding these known defects (``KnownDefect``).
package struct SimulationOptions: Sendable {
    package var seed: UInt64
    package var steps: Int
    /// Simulated clients (connections), each with its own requests.
    package var clients = 4
    /// Known defects whose operation mix the generator does not make.
    package var avoiding: Set<KnownDefect> = []
    /// The daemon's `maxValueBytes`: 2 MiB rather than 16, so that the
    /// values made at the bound are written in a time that a debug build on
    /// a shared machine keeps within ``stallBound`` (the same code bounds
    /// them either way).
    package var maxValueBytes = 2 << 20
    /// No answer line may be longer: the largest value the daemon makes
    /// (`maxValueBytes`) and a line's worth of the rest of a record or page
    /// (`maxLineBytes`), as docs/PROTOCOL.md ("Bounded values") promises.
    package var maxAnswerBytes: Int { maxValueBytes + DaemonLimits().maxLineBytes }
    /// The daemon's `maxBatchAnswerBytes`: that of a single answer, not the
    /// 64 MiB default, so that batches over large values reach it and have
    /// members' answers left out. A batch's answer may pass it by the short
    /// errors that replace those (``batchAnswerSlack`` each).
    package var maxBatchAnswerBytes: Int { maxAnswerBytes }
    /// Bytes a left-out member's -32004 error may take, with its id and comma.
    package static let batchAnswerSlack = 256
    /// Held promises may not pass this (`maxPromises` given to the registry or daemon).
    package var maxPromises = 20_000
    /// The store's files may not pass this (in process, checked at each restart).
    package var maxStoreBytes = 256 << 20
    /// Settled promises are collected this long after they settle (nil: no retention).
    package var retainMilliseconds: Int64?
    /// No turn of the loop (in process: the CPU time of a line handled, a
    /// piece of queued work or a timer fired) or answer (daemon: its wall
    /// time) may take longer: the bound on how long one client's request can
    /// hold up the others. `SIMULATION_TURN_MS` sets it (to find a seed's
    /// longest turns).
    package var stallBound: Duration = .milliseconds(Int(number("SIMULATION_TURN_MS") ?? 1_000))
    /// The daemon variant's bound on an answer's wall time: a debug daemon
    /// beside the whole suite on two shared cores may wait for a core longer
    /// than it works. `SIMULATION_STALL_MS` sets it (a soak on a quiet
    /// machine: 2000).
    package var wallStallBound: Duration = .milliseconds(Int(number("SIMULATION_STALL_MS") ?? 5_000))
    /// Percent of steps that are a clean restart, and a crash (kill -9)
    /// restart. Each restart sweeps every record once or twice: in process,
    /// half the run's time at 2% each.
    package var cleanRestartPercent = 1
    package var crashRestartPercent = 1
    /// Longest `then` chain made by one step, and longest `any` chain.
    package var maxChainLength = 300
    package var maxAnyChainLength = 200
    /// The mix of shapes the generator makes (`SIMULATION_PROFILE`).
    package var profile: SimulationProfile = .mixed
    /// Percent of lines that grow a long chain of `all`, `any`, `race` and
    /// `allSettled`, each over the one before, by up to
    /// ``maxCombinatorChainLinks`` links a line, until it is
    /// ``maxCombinatorChainLength`` long: settling or cancelling either end
    /// walks the whole chain, and so does a restart that restores it.
    /// While ``KnownDefect/longTurns`` is avoided, the mixed profile's chains
    /// stay short enough to settle in one turn within the stall bound.
    package var combinatorChainPercent: Int { profile == .hostile ? 30 : 2 }
    package var maxCombinatorChainLinks: Int { profile == .mixed && avoiding.contains(.longTurns) ? 100 : 990 }
    package var maxCombinatorChainLength: Int {
        profile == .hostile ? 12_000 : avoiding.contains(.longTurns) ? 400 : 3_000
    }
    /// Percent of lines that are an `all` over one id repeated thousands of
    /// times (a fan-in), often cancelled in the same line.
    package var repeatedFanInPercent: Int { profile == .hostile ? 10 : avoiding.contains(.longTurns) ? 0 : 1 }
    /// Percent of lines that are one batch of many `list` reads of up to 10,000 records.
    package var heavyReadPercent: Int { profile == .hostile ? 10 : avoiding.contains(.longTurns) ? 0 : 1 }
    /// Percent of steps (daemon variant) that add hostile traffic beside the
    /// step: a flood of connections opened and closed, and subscribers that
    /// never read while large progress messages go out.
    package var hostileTrafficPercent: Int { profile == .hostile ? 25 : 2 }

    package init(seed: UInt64, steps: Int, profile: SimulationProfile? = nil) {
        self.seed = seed
        self.steps = steps
        self.profile = profile ?? Self.environment["SIMULATION_PROFILE"].flatMap(SimulationProfile.init(rawValue:)) ?? .mixed
        if self.profile == .hostile { maxPromises = 60_000 }
        // Every fourth seed runs with retention, so that collection meets restarts.
        if seed % 4 == 1 { retainMilliseconds = 2_000 }
        if let text = Self.environment["SIMULATION_AVOID"] {
            avoiding = Set(text.split(separator: ",").compactMap {
                KnownDefect(rawValue: $0.trimmingCharacters(in: .whitespaces))
            })
        }
        if let text = Self.environment["SIMULATION_INCLUDE"] {
            let names = Set(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            avoiding = names.contains("all") ? [] : avoiding.filter { !names.contains($0.rawValue) }
        }
        // With the long-turns shapes avoided again, the hostile profile checks only that
        // nothing crashes, stalls for a minute or is lost.
        if self.profile == .hostile && avoiding.contains(.longTurns) {
            stallBound = .seconds(60)
            wallStallBound = .seconds(60)
        }
    }

    package static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// A number from the environment, decimal or 0x hex.
    package static func number(_ name: String) -> UInt64? {
        guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if text.hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) }
        return UInt64(text)
    }

    /// The seeds to run: `SIMULATION_SEED` alone (or `SIMULATION_SEEDS` from
    /// it), else `count` seeds (or `SIMULATION_SEEDS`) from `base`.
    package static func seeds(base: UInt64, count: Int) -> [UInt64] {
        let many = number("SIMULATION_SEEDS").map { Int(clamping: $0) }
        if let seed = number("SIMULATION_SEED") {
            return (0..<max(1, many ?? 1)).map { seed &+ UInt64($0) }
        }
        return (0..<max(1, many ?? count)).map { base &+ UInt64($0) }
    }

    /// `SIMULATION_STEPS`, else `fallback`.
    package static func steps(_ fallback: Int) -> Int {
        number("SIMULATION_STEPS").map { max(1, Int(clamping: $0)) } ?? fallback
    }

    /// The switches as a person would set them to replay this run.
    package var replay: String {
        let included = Set(KnownDefect.allCases).subtracting(avoiding).map(\.rawValue).sorted()
        return "SIMULATION_SEED=\(seed) SIMULATION_STEPS=\(steps) SIMULATION_PROFILE=\(profile.rawValue)"
            + (included.isEmpty ? "" : " SIMULATION_INCLUDE=\(included.joined(separator: ","))")
    }
}
