// swift-tools-version:6.1
import Foundation
import PackageDescription

/// SwiftPM names a path dependency after its folder: "main" in the main
/// checkout, the worktree's name elsewhere.
let rootPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

// A package of its own so that swift-nio, which the benchmarks compare
// against, never becomes a dependency of the libraries or of the tests.
let package = Package(
    name: "PromiseBenchmarks",
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
    ],
    targets: [
        .target(
            name: "BenchmarkSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Promise", package: rootPackage),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The promise lock against its old spin lock, Synchronization.Mutex
        // and NSLock, with 64 threads on the machine's cores.
        .executableTarget(
            name: "ContentionBenchmarks",
            dependencies: [.product(name: "Promise", package: rootPackage)],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(name: "CEpoll"),
        // promised against redis-server and a bare echo server, across
        // processes; it starts and stops the servers itself.
        .executableTarget(
            name: "DaemonBenchmarks",
            dependencies: ["CEpoll"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
