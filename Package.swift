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
        .library(name: "PromiseJSON", targets: ["PromiseJSON"]),
        .library(name: "PromiseModel", targets: ["PromiseModel"]),
        .library(name: "PromiseRPC", targets: ["PromiseRPC"]),
        .library(name: "PromiseClient", targets: ["PromiseClient"]),
        .library(name: "PromiseStore", targets: ["PromiseStore"]),
        .library(name: "PromiseRegistry", targets: ["PromiseRegistry"]),
        .library(name: "PromiseDispatch", targets: ["PromiseDispatch"]),
        .library(name: "PromiseServer", targets: ["PromiseServer"]),
        .library(name: "PromiseSQLiteStore", targets: ["PromiseSQLiteStore"]),
        .executable(name: "promised", targets: ["promised"]),
        .executable(name: "promisectl", targets: ["promisectl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        // pidfd_open for promisectl run, which Swift's Glibc module does not offer.
        .systemLibrary(name: "CLinuxProcess"),
        // The futex calls under the promise lock (Sources/Promise/Core/FutexLock.swift),
        // which Swift cannot make itself: syscall(2) is variadic.
        .systemLibrary(name: "CFutex"),
        // How the daemon starts `then … exec` commands without fork:
        // posix_spawn, pidfd_open and waitpid, in C since Swift cannot call
        // variadic syscall(2) and its Glibc module lacks the GNU spawn calls.
        // A compiled target so that its header includes no system header.
        .target(name: "CProcessSpawn"),
        .target(
            name: "Promise",
            dependencies: ["CFutex"],
            swiftSettings: strictSettings
        ),
        // JSON values: parsing, serializing, sizes.
        .target(
            name: "PromiseJSON",
            swiftSettings: strictSettings
        ),
        // The typed domain model: promise ids, rejection reasons, step logs,
        // the daemon's limits. No JSON-RPC.
        .target(
            name: "PromiseModel",
            dependencies: ["Promise", "PromiseJSON"],
            swiftSettings: strictSettings
        ),
        // The JSON-RPC 2.0 wire: requests, responses, errors, params, and
        // the peer and handler a server speaks through.
        .target(
            name: "PromiseRPC",
            dependencies: ["Promise", "PromiseJSON", "PromiseModel"],
            swiftSettings: strictSettings
        ),
        // The clients over a Unix socket: blocking (promisectl's) and async,
        // typed (PromiseConnection); no libuv, no server code.
        .target(
            name: "PromiseClient",
            dependencies: [
                "Promise", "PromiseJSON", "PromiseModel", "PromiseRPC",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The store protocol, what it keeps (StoredPromise), the memory
        // store, and the id-keyed tables both the registry and stores use.
        .target(
            name: "PromiseStore",
            dependencies: ["PromiseJSON", "PromiseModel"],
            swiftSettings: strictSettings
        ),
        // The daemon's promises by id: typed commands in, typed outcomes,
        // errors and events out, group commit to the store. No JSON-RPC;
        // timers and processes come through LoopServices, no libuv.
        .target(
            name: "PromiseRegistry",
            dependencies: [
                "Promise",
                "PromiseJSON",
                "PromiseModel",
                "PromiseStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // JSON-RPC lines to registry commands, and outcomes, errors and
        // events back to answer and notification lines; batches by turn.
        .target(
            name: "PromiseDispatch",
            dependencies: [
                "Promise",
                "PromiseJSON",
                "PromiseModel",
                "PromiseRPC",
                "PromiseStore",
                "PromiseRegistry",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The libuv server: loop thread, connections, child processes, and
        // the LoopServices the registry runs on.
        .target(
            name: "PromiseServer",
            dependencies: [
                "Promise",
                "PromiseJSON",
                "PromiseModel",
                "PromiseRPC",
                "PromiseStore",
                "PromiseRegistry",
                "CLibUV",
                "CProcessSpawn",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The daemon's durable store, apart from PromiseStore so that the
        // memory store, tests and clients do not link SQLite.
        .target(
            name: "PromiseSQLiteStore",
            dependencies: [
                "PromiseJSON",
                "PromiseModel",
                "PromiseStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "promised",
            dependencies: [
                "PromiseJSON",
                "PromiseModel",
                "PromiseRPC",
                "PromiseStore",
                "PromiseRegistry",
                "PromiseDispatch",
                "PromiseServer",
                "PromiseSQLiteStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The command line: the client and the wire only, no libuv, no server.
        .executableTarget(
            name: "promisectl",
            dependencies: [
                "PromiseJSON",
                "PromiseModel",
                "PromiseRPC",
                "PromiseClient",
                "CLinuxProcess",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        // Helpers the test targets share: seeded randomness, a manual
        // executor, fake loop services, a recording log handler, the
        // simulation's model. A regular target, as swift-nio's NIOTestUtils
        // is, so that several test targets can depend on it; no product
        // names it, so users of the package never see it.
        .target(
            name: "PromiseTestSupport",
            dependencies: [
                "Promise", "PromiseJSON", "PromiseModel", "PromiseRPC", "PromiseRegistry",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseTests",
            dependencies: ["Promise"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseJSONTests",
            dependencies: ["PromiseJSON", "PromiseTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseModelTests",
            dependencies: ["PromiseModel"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseRPCTests",
            dependencies: ["Promise", "PromiseJSON", "PromiseModel", "PromiseRPC", "PromiseTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseStoreTests",
            dependencies: ["PromiseJSON", "PromiseModel", "PromiseStore", "PromiseTestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseRegistryTests",
            dependencies: [
                "Promise", "PromiseJSON", "PromiseModel", "PromiseStore", "PromiseRegistry", "PromiseTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The registry is driven here too, through the JSON-RPC lines a
        // client sends (RPCHarness): a file that tests both goes with the
        // higher module. The fuzzer frames its lines with the server's
        // LineFramer before the dispatcher reads them.
        .testTarget(
            name: "PromiseDispatchTests",
            dependencies: [
                "Promise", "PromiseJSON", "PromiseModel", "PromiseRPC", "PromiseStore", "PromiseRegistry",
                "PromiseDispatch", "PromiseServer", "PromiseTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseServerTests",
            dependencies: [
                "Promise", "PromiseJSON", "PromiseModel", "PromiseRPC", "PromiseStore", "PromiseRegistry",
                "PromiseServer", "CLibUV",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseClientTests",
            dependencies: ["PromiseClient", "PromiseJSON", "PromiseModel", "PromiseRPC"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PromiseSQLiteStoreTests",
            dependencies: [
                "PromiseSQLiteStore",
                "PromiseJSON",
                "PromiseModel",
                "PromiseRPC",
                "PromiseStore",
                "PromiseRegistry",
                "PromiseDispatch",
                "PromiseServer",
                "PromiseTestSupport",
                // To plant corrupt rows and inspect the file behind the store's back.
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "Promise", "PromiseJSON", "PromiseModel", "PromiseRPC", "PromiseClient", "PromiseStore", "PromiseRegistry",
                "PromiseDispatch", "PromiseServer",
                "PromiseSQLiteStore",
                "PromiseTestSupport",
                "promised", "promisectl",
            ],
            swiftSettings: strictSettings
        ),
    ]
)
