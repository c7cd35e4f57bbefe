@testable import PromiseModel
@testable import PromiseRPC
@testable import PromiseServer
import Testing

@Suite("LineDeadlines")
struct LineDeadlinesTests {
    @Test("a line unfinished for the timeout expires, once; one finished in time does not")
    func unfinishedLineExpiresOnce() {
        var deadlines = LineDeadlines(timeoutMilliseconds: 1_000)
        deadlines.lineStarted(1, at: 100)
        deadlines.lineStarted(2, at: 200)
        deadlines.lineEnded(2)
        #expect(deadlines.expired(at: 1_099) == [])
        #expect(deadlines.expired(at: 1_100) == [1])
        #expect(deadlines.expired(at: 5_000) == [])
        #expect(deadlines.isEmpty)
    }

    @Test("a line keeps the time it started while more of it arrives")
    func startKeptWhileLineGrows() {
        var deadlines = LineDeadlines(timeoutMilliseconds: 1_000)
        deadlines.lineStarted(1, at: 0)
        deadlines.lineStarted(1, at: 900)
        #expect(deadlines.expired(at: 1_000) == [1])
    }

    @Test("a line whose clock stopped (reading paused) starts again from when it resumed")
    func clockStartsAgainAfterPause() {
        var deadlines = LineDeadlines(timeoutMilliseconds: 1_000)
        deadlines.lineStarted(1, at: 0)
        deadlines.lineEnded(1)
        deadlines.lineStarted(1, at: 800)
        #expect(deadlines.expired(at: 1_500) == [])
        #expect(deadlines.expired(at: 1_800) == [1])
    }

    @Test("expired lines come oldest first, ties by connection id")
    func expiredOldestFirst() {
        var deadlines = LineDeadlines(timeoutMilliseconds: 10)
        deadlines.lineStarted(5, at: 3)
        deadlines.lineStarted(9, at: 1)
        deadlines.lineStarted(2, at: 3)
        #expect(deadlines.count == 3)
        #expect(deadlines.expired(at: 100) == [9, 2, 5])
    }

    @Test("the check interval is a quarter of the timeout, from 50 ms to 1 s")
    func checkInterval() {
        #expect(LineDeadlines(timeoutMilliseconds: 1_000).checkIntervalMilliseconds == 250)
        #expect(LineDeadlines(timeoutMilliseconds: 100).checkIntervalMilliseconds == 50)
        #expect(LineDeadlines(timeoutMilliseconds: 30_000).checkIntervalMilliseconds == 1_000)
    }
}
