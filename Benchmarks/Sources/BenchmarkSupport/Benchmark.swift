import Foundation

/// One measured operation. `run(n)` performs the operation `n` times; the
/// runner divides the elapsed time by `n`.
public struct Benchmark: Sendable {
    public let name: String
    /// The benchmark this one is compared with, measured in the same run.
    public let anchor: String?
    public let run: @Sendable (Int) -> Void

    public init(_ name: String, anchor: String? = nil, run: @escaping @Sendable (Int) -> Void) {
        self.name = name
        self.anchor = anchor
        self.run = run
    }
}

/// Runs benchmarks and prints one JSON object per line:
/// `{"name":…,"anchor":…,"nsPerOp":…,"iterations":…}`.
///
/// Each benchmark is run in `rounds` rounds of at least `minimumRoundTime`;
/// the reported figure is the median round. Shared, noisy machines make
/// single timings meaningless; ratios against an anchor measured in the same
/// run are what the report compares. The rounds of all benchmarks are taken
/// in turn (round 1 of each, then round 2 of each…), so that a busy spell on
/// the machine slows a benchmark and its anchor alike instead of whichever
/// was being measured then.
public struct BenchmarkRunner {
    public var rounds = 7
    public var minimumRoundTime: Duration = .milliseconds(60)

    public init() {}

    public func main(_ benchmarks: [Benchmark], arguments: [String] = CommandLine.arguments) {
        // `--only NAME --iterations N` runs one benchmark a fixed number of
        // times and prints nothing: for counting allocations or
        // instructions under valgrind.
        if let only = value(of: "--only", in: arguments) {
            let iterations = Int(value(of: "--iterations", in: arguments) ?? "1000") ?? 1000
            guard let benchmark = benchmarks.first(where: { $0.name == only }) else {
                FileHandle.standardError.write(Data("no benchmark named \(only)\n".utf8))
                exit(64)
            }
            benchmark.run(iterations)
            return
        }
        if arguments.contains("--list") {
            for benchmark in benchmarks { print(benchmark.name) }
            return
        }
        let iterations = benchmarks.map(calibrate)
        var samples = Array(repeating: [Double](), count: benchmarks.count)
        for _ in 0..<rounds {
            for (index, benchmark) in benchmarks.enumerated() {
                let elapsed = time { benchmark.run(iterations[index]) }
                samples[index].append(nanoseconds(elapsed) / Double(iterations[index]))
            }
        }
        for (index, benchmark) in benchmarks.enumerated() {
            let sorted = samples[index].sorted()
            var fields = [
                "\"name\":\"\(benchmark.name)\"",
                "\"nsPerOp\":\(String(format: "%.2f", sorted[sorted.count / 2]))",
                "\"iterations\":\(iterations[index])",
            ]
            if let anchor = benchmark.anchor { fields.append("\"anchor\":\"\(anchor)\"") }
            print("{" + fields.joined(separator: ",") + "}")
        }
    }

    /// Warms `benchmark` up and finds the iteration count that fills a round.
    func calibrate(_ benchmark: Benchmark) -> Int {
        var iterations = 1
        while true {
            let elapsed = time { benchmark.run(iterations) }
            if elapsed >= minimumRoundTime || iterations >= 1 << 26 { return iterations }
            iterations *= 2
        }
    }

    func time(_ body: () -> Void) -> Duration {
        let clock = ContinuousClock()
        return clock.measure(body)
    }

    func nanoseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }

    func value(of flag: String, in arguments: [String]) -> String? {
        guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }
}

/// Keeps the optimiser from deleting work whose result is unused.
@inline(never)
public func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
