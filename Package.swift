// swift-tools-version:6.1
import PackageDescription

/// Settings every target shares: Swift 6 mode, existentials spelled out, and
/// imports that say where each member comes from.
let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "swift-promise-toolkit",
    products: [
        .library(name: "Promise", targets: ["Promise"]),
        .library(name: "PromiseRPC", targets: ["PromiseRPC"]),
        .executable(name: "promised", targets: ["promised"]),
        .executable(name: "promisectl", targets: ["promisectl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .target(
            name: "Promise",
            swiftSettings: strictSettings
        ),
        .target(
            name: "PromiseRPC",
            dependencies: [
                "Promise",
                "CLibUV",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "promised",
            dependencies: [
                "PromiseRPC",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "promisectl",
            dependencies: [
                "PromiseRPC",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseTests",
            dependencies: ["Promise"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseRPCTests",
            dependencies: ["PromiseRPC"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["PromiseRPC", "promised", "promisectl"],
            swiftSettings: strictSettings
        ),
    ]
)
