@testable import PromiseRegistry
import Testing

/// The lease of one promise, fed events by hand: taking it, its holder's
/// closing, a restart and the grace after it. No registry, no session, no timer.
@Suite("lease state")
struct LeaseStateTests {
    @Test("a lease made at create is held by its connection; its closing rejects the promise")
    func createdLeaseRejectedWhenHolderCloses() {
        var lease = LeaseState()
        #expect(!lease.isLeased)
        lease.created(by: 7)
        #expect(lease.holder == .held(7))
        #expect(lease.isLeased)
        #expect(lease.holderClosed(8, daemonStopping: false) == .none)
        #expect(lease.holderClosed(7, daemonStopping: false) == .reject)
    }

    @Test("while the daemon stops, the holder's closing keeps the lease for the restart")
    func stoppingKeepsTheLease() {
        var lease = LeaseState()
        lease.created(by: 7)
        #expect(lease.holderClosed(7, daemonStopping: true) == .none)
        #expect(lease.holder == .held(7))
    }

    @Test("taking a lease: new flag stored once; the holder again changes nothing; another open holder refuses")
    func takeRules() {
        var lease = LeaseState()
        #expect(lease.take(by: 1, isPending: true, holderIsOpen: false) == .taken(storesFlag: true))
        #expect(lease.holder == .held(1))
        #expect(lease.take(by: 1, isPending: true, holderIsOpen: true) == .unchanged)
        #expect(lease.take(by: 2, isPending: true, holderIsOpen: true) == .refused(holder: 1))
        #expect(lease.holder == .held(1))
        // The holder is gone (closed while the daemon stopped): anyone takes it, the flag is stored already.
        #expect(lease.take(by: 2, isPending: true, holderIsOpen: false) == .taken(storesFlag: false))
        #expect(lease.holder == .held(2))
        #expect(lease.take(by: 3, isPending: false, holderIsOpen: true) == .alreadySettled)
        #expect(lease.holder == .held(2))
    }

    @Test("settling lets the holder's session go of the lease; the flag stays for the record")
    func settledReleasesTheHolder() {
        var lease = LeaseState()
        #expect(lease.settled() == nil)
        lease.created(by: 4)
        #expect(lease.settled() == 4)
        #expect(lease.isLeased)
    }

    @Test("a restored lease waits for a holder within the grace; without a grace it is rejected at once")
    func restoredLeases() {
        var waiting = LeaseState()
        #expect(waiting.restored(leased: true, graceMilliseconds: 30_000) == .awaitHolder)
        #expect(waiting.holder == .unclaimed)
        var immediate = LeaseState()
        #expect(immediate.restored(leased: true, graceMilliseconds: 0) == .rejectNow)
        var plain = LeaseState(holder: .held(3))
        #expect(plain.restored(leased: false, graceMilliseconds: 30_000) == .none)
        #expect(plain.holder == .none)
    }

    @Test("the end of the grace rejects an unclaimed pending lease, not one taken back or settled")
    func graceEnd() {
        var lease = LeaseState()
        _ = lease.restored(leased: true, graceMilliseconds: 1_000)
        #expect(lease.graceEnded(isPending: true) == .reject)
        #expect(lease.graceEnded(isPending: false) == .none)
        #expect(lease.take(by: 9, isPending: true, holderIsOpen: false) == .taken(storesFlag: false))
        #expect(lease.graceEnded(isPending: true) == .none)
        #expect(LeaseState().graceEnded(isPending: true) == .none)
    }

    @Test("only a held lease names a holder; a restored one is leased with none")
    func holderOfEachState() {
        var lease = LeaseState()
        #expect(lease.holderID == nil && !lease.isLeased)
        lease.created(by: 5)
        #expect(lease.holderID == 5 && lease.isLeased)
        #expect(lease.restored(leased: true, graceMilliseconds: 1) == .awaitHolder)
        #expect(lease.holderID == nil && lease.isLeased)
        #expect(lease.restored(leased: false, graceMilliseconds: 1) == .none)
        #expect(!lease.isLeased)
    }

    @Test("creating a lease twice is a precondition failure")
    func createdTwiceTraps() async {
        await #expect(processExitsWith: .failure) {
            var lease = LeaseState()
            lease.created(by: 1)
            lease.created(by: 2)
        }
    }
}
