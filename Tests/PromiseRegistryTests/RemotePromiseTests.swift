import Glibc
import Promise
@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRegistry
import Testing
import PromiseStore

@Suite("RemotePromise")
struct RemotePromiseTests {
    /// The usable bytes of the heap block holding `object`: glibc's
    /// `malloc_usable_size`, looked up at run time because <malloc.h> is
    /// not part of Swift's Glibc module.
    private func heapBlockBytes(_ object: AnyObject) throws -> Int {
        typealias UsableSize = @convention(c) (UnsafeMutableRawPointer?) -> Int
        let symbol = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_usable_size"))
        return unsafeBitCast(symbol, to: UsableSize.self)(Unmanaged.passUnretained(object).toOpaque())
    }

    @Test("a promise made by create fits a 96-byte heap block (88 usable bytes), settled or not")
    func createdPromiseFitsNinetySixBytes() throws {
        let promise = RemotePromise(id: "p1", promise: nil, kind: .created, sequence: 1, parentID: nil,
                                    inputIDs: nil, name: nil, created: 1_700_000_000_000)
        #expect(try heapBlockBytes(promise) == 88)
        #expect(promise.details == nil)
        #expect(promise.settleWithoutCore(.success(.string("v"))))
        promise.settled = 1_700_000_000_001
        promise.settlementHandled = true
        #expect(promise.details == nil, "settling without a core promise needs no details")
    }

    @Test("settled reads back what was set, nil included, and the flags are independent of each other")
    func settledAndFlagsRoundTrip() {
        let promise = RemotePromise(id: "p", promise: nil, kind: .created, sequence: 0, parentID: nil,
                                    inputIDs: nil, name: nil, created: 0)
        #expect(promise.settled == nil)
        for time in [0, -1, Int64.max, 1_700_000_000_000] as [Int64] {
            promise.settled = time
            #expect(promise.settled == time)
        }
        promise.settled = nil
        #expect(promise.settled == nil)
        promise.isRemoved = true
        promise.hasNoValueText = true
        #expect(promise.isRemoved && promise.hasNoValueText)
        #expect(!promise.settlementHandled && !promise.sharesParentValue && !promise.hasOwnValue && !promise.observesProgress)
        promise.isRemoved = false
        #expect(!promise.isRemoved && promise.hasNoValueText)
    }

    @Test("a core promise is kept in the details until compact lets it go, and the outcome stays")
    func corePromiseLivesInDetailsUntilCompacted() {
        let core = Promise<JSONValue>()
        let promise = RemotePromise(id: "p", promise: core, kind: .created, sequence: 0, parentID: nil,
                                    inputIDs: nil, name: nil, created: 0)
        #expect(promise.corePromise === core)
        #expect(promise.details?.core === core)
        #expect(promise.isPending)
        #expect(core.fulfill(.int(7)))
        #expect(promise.result.flatMap { try? $0.get() } == .int(7))
        promise.compact()
        #expect(promise.corePromise == nil)
        #expect(promise.details == nil, "details made for the core alone go with it")
        #expect(promise.result.flatMap { try? $0.get() } == .int(7))
        #expect(promise.state == "fulfilled")
    }

    @Test("compacting keeps details that hold more than the core promise")
    func compactKeepsDetailsInUse() {
        let core = Promise<JSONValue>()
        let promise = RemotePromise(id: "p", promise: core, kind: .created, sequence: 0, parentID: nil,
                                    inputIDs: nil, name: "build", created: 0)
        #expect(core.reject(PromiseError.timedOut))
        promise.compact()
        #expect(promise.corePromise == nil)
        #expect(promise.details?.name == "build")
    }

    @Test("Details.isEmpty checks every field Details has (18): a field added must be added there")
    func detailsEmptinessCoversEveryField() {
        let details = RemotePromise.Details()
        #expect(details.isEmpty)
        #expect(Mirror(reflecting: details).children.count == 18)
        details.lease.created(by: 1)
        #expect(!details.isEmpty)
        details.lease = LeaseState()
        details.childIDs = ["c"]
        #expect(!details.isEmpty)
    }
}
