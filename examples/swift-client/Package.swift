// swift-tools-version:6.1
import Foundation
import PackageDescription

/// SwiftPM names a path dependency after its folder: "main" in the main
/// checkout, the worktree's name elsewhere.
let rootPackage = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

// A program of its own that uses the toolkit as any other package would:
// by path here, by URL in yours.
let package = Package(
    name: "SwiftClientExample",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../.."),
    ],
    targets: [
        // A build whose steps meet scripts on well-known ids: mirrors,
        // publish, watch, through PromiseConnection.
        .executableTarget(
            name: "RemotePipeline",
            dependencies: [
                .product(name: "Promise", package: rootPackage),
                .product(name: "PromiseClient", package: rootPackage),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Round trips per second through one async connection from 50
        // tasks, and through blocking clients from 50 threads; bytes per mirror.
        .executableTarget(
            name: "ConnectionBench",
            dependencies: [
                .product(name: "Promise", package: rootPackage),
                .product(name: "PromiseClient", package: rootPackage),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
