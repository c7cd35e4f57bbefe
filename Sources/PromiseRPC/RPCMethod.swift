import PromiseJSON

/// The methods the daemon answers (docs/PROTOCOL.md), as the parser tells
/// them from the bytes of a request's "method".
///
/// The dispatcher picks a method by this value rather than comparing the
/// method's string with each name in turn, and the parser finds it for the
/// common methods from the word it already loads for the string (see
/// ``JSONParser/shortString()``), making no `String` of its bytes. A method
/// that is not among these keeps its string, for the -32601 answer that
/// names it.
///
/// ```swift
/// RPCMethod(rawValue: "pool.set")          // .poolSet
/// RPCMethod(word: ShortWord.create)        // .create
/// ```
package enum RPCMethod: String, Sendable, Hashable, CaseIterable {
    case create, resolve, reject, cancel, cancelPrefix, get, list, wait, subscribe, unsubscribe
    case then, progress, all, any, race, allSettled, info, forget, logs, log, lease
    case poolSet = "pool.set"
    case poolAcquire = "pool.acquire"
    case poolRelease = "pool.release"

    /// The method whose name, of at most 7 bytes, has the word `word`
    /// (``JSONParser/word(_:)``); nil for any other word, among them the
    /// longer names', which are read as strings.
    init?(word: UInt64) {
        switch word {
        case ShortWord.create: self = .create
        case ShortWord.resolve: self = .resolve
        case ShortWord.reject: self = .reject
        case ShortWord.get: self = .get
        case ShortWord.wait: self = .wait
        case MethodWord.cancel: self = .cancel
        case MethodWord.list: self = .list
        case MethodWord.then: self = .then
        case MethodWord.all: self = .all
        case MethodWord.any: self = .any
        case MethodWord.race: self = .race
        case MethodWord.info: self = .info
        case MethodWord.forget: self = .forget
        case MethodWord.logs: self = .logs
        case MethodWord.log: self = .log
        case MethodWord.lease: self = .lease
        default: return nil
        }
    }

    /// Whether the method changes what the store keeps (promises, logs,
    /// pool limits): refused while the store cannot write.
    package var changesStoredState: Bool {
        switch self {
        case .create, .resolve, .reject, .cancel, .then, .progress, .all, .any, .race, .allSettled, .forget,
             .lease, .cancelPrefix, .log, .poolSet:
            true
        case .get, .list, .wait, .subscribe, .unsubscribe, .info, .logs, .poolAcquire, .poolRelease:
            false
        }
    }
}

/// The method a request names (a string, checked): one of the daemon's, or
/// one it does not have, answered -32601.
package enum RequestedMethod: Hashable {
    case known(RPCMethod)
    case unknown(String)

    /// The method's name as sent.
    package var name: String {
        switch self {
        case .known(let method): method.rawValue
        case .unknown(let name): name
        }
    }
}

/// ``JSONParser/word(_:)`` of the method names of at most 7 bytes that
/// ``ShortWord`` does not hold, written out as it does; RPCMethodTests
/// checks each against its text.
enum MethodWord {
    static let cancel: UInt64 = 0x6C_65_63_6E_61_63
    static let list: UInt64 = 0x74_73_69_6C
    static let then: UInt64 = 0x6E_65_68_74
    static let all: UInt64 = 0x6C_6C_61
    static let any: UInt64 = 0x79_6E_61
    static let race: UInt64 = 0x65_63_61_72
    static let info: UInt64 = 0x6F_66_6E_69
    static let forget: UInt64 = 0x74_65_67_72_6F_66
    static let logs: UInt64 = 0x73_67_6F_6C
    static let log: UInt64 = 0x67_6F_6C
    static let lease: UInt64 = 0x65_73_61_65_6C
}
