// A Swift program and shell scripts meeting on well-known ids.
//
//   swift run --package-path examples/swift-client RemotePipeline [SOCKET]
//
// It mirrors `example/PID/lib` (which a script resolves, here a second
// connection plays the script), publishes its own step `example/PID/test`
// (which a script could `promisectl wait` on), and watches both.
import Foundation
import Promise
import PromiseClient

/// What the library step hands on: any Codable and Sendable type travels.
struct Artifact: Codable, Sendable {
    var path: String
    var bytes: Int
}

let socketPath = CommandLine.arguments.dropFirst().first   // nil: where promisectl looks
let remote = try await PromiseConnection.connect(socketPath: socketPath)
let prefix = "example/\(ProcessInfo.processInfo.processIdentifier)"

// A remote promise as a typed core promise, before anyone created it.
let lib = remote.promise("\(prefix)/lib", as: Artifact.self)
let size = lib.then { artifact in artifact.bytes }

// A local promise others can wait on by name; leased, so a crash rejects it.
let test = Promise<String>()
try await remote.publish(test, as: "\(prefix)/test")

// Both, as an AsyncSequence of typed events.
let events = remote.watch(["\(prefix)/lib", "\(prefix)/test"])
let log = Task {
    var lines: [String] = []
    for try await event in events {
        if case .settled(let record) = event {
            lines.append("\(record.id.dropFirst(prefix.count + 1)) \(record.state.rawValue)")
        }
    }
    return lines
}

// The script's side: `promisectl create ID && promisectl resolve ID '{"path":…}'`.
let script = try await PromiseConnection.connect(socketPath: socketPath)
try await script.create("\(prefix)/lib")
try await script.resolve("\(prefix)/lib", with: Artifact(path: "lib/libfoo.a", bytes: 4096))

print("lib bytes: \(try await size.value)")
test.fulfill("passed")
let tested = try await script.wait("\(prefix)/test", timeout: .seconds(10))
print("test: \(try tested.value(as: String.self))")
for line in try await log.value { print("watched: \(line)") }
script.close()
remote.close()
