import Foundation
import Promise
import Testing

/// The README's tour of the core, kept compiling and true here. When you
/// change one, change the other.
@Suite("README tour")
struct ReadmeTourTests {
    @Test("creating, chaining, recovering and waiting work as the README shows")
    func chainingTour() throws {
        // Create a promise and settle it from anywhere.
        let answer = Promise<Int>()
        DispatchQueue.global().async { answer.fulfill(21) }

        // Chain: handlers run on .default unless told otherwise.
        let doubled = answer.then { $0 * 2 }
        let text = doubled
            .then { value -> String in
                guard value > 0 else { throw CocoaError(.featureUnsupported) }
                return "answer: \(value)"
            }
            .recover { _ in "no answer" }

        // Block in command-line code; `await promise.value` in async code.
        #expect(try text.wait(timeout: .seconds(5)) == "answer: 42")
    }

    @Test("cancelling the last consumer stops the work, as the README shows")
    func cancellingTour() throws {
        let download = Promise<String>()
        let stopped = Promise<Bool>()
        download.onCancel(on: .inline) { stopped.fulfill(true) }   // stop the real work here

        let thumbnail = download.then { "thumbnail of \($0)" }
        thumbnail.cancel()   // download's only child: download is cancelled too

        #expect(download.isCancelled)
        #expect(try stopped.wait(timeout: .seconds(5)))
    }

    @Test("combining and awaiting work as the README shows")
    func combiningTour() async throws {
        let parts: [Promise<Int>] = [Promise(value: 1), Promise(value: 2), Promise { 3 }]
        let sum = Promise.all(parts).then { $0.reduce(0, +) }
        #expect(try await sum.value == 6)

        let first = Promise.race([Promise<Void>.delay(.milliseconds(50)).then { 1 }, Promise(value: 2)])
        #expect(try await first.value == 2)
    }
}
