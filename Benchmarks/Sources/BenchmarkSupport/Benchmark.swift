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
/// Each benchmark is run until it has taken at least `minimumTime`, in
/// `rounds` rounds; the reported figure is the median round. Shared, noisy
/// machines make single timings meaningless; ratios against an anchor
/// measured in the same run are what the report compares.
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
        for benchmark in benchmarks {
            let (nsPerOp, iterations) = measure(benchmark)
            var fields = [
                "\"name\":\"\(benchmark.name)\"",
                "\"nsPerOp\":\(String(format: "%.2f", nsPerOp))",
                "\"iterations\":\(iterations)",
            ]
            if let anchor = benchmark.anchor { fields.append("\"anchor\":\"\(anchor)\"") }
            print("{" + fields.joined(separator: ",") + "}")
            fflush(nil)
        }
    }

    func measure(_ benchmark: Benchmark) -> (nsPerOp: Double, iterations: Int) {
        // Warm up and find an iteration count that fills a round.
        var iterations = 1
        while true {
            let elapsed = time { benchmark.run(iterations) }
            if elapsed >= minimumRoundTime || iterations >= 1 << 26 { break }
            iterations *= 2
        }
        var samples: [Double] = []
        for _ in 0..<rounds {
            let elapsed = time { benchmark.run(iterations) }
            samples.append(nanoseconds(elapsed) / Double(iterations))
        }
        samples.sort()
        return (samples[samples.count / 2], iterations)
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
