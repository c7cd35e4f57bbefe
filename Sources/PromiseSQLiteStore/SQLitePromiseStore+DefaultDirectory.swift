import Foundation
import Glibc

extension SQLitePromiseStore {
    /// Where the daemon keeps its store when `--store` is not given, after the
    /// XDG Base Directory rules: `$XDG_STATE_HOME/promised` when that is an
    /// absolute path (the spec says to ignore relative ones), else
    /// `$HOME/.local/state/promised`, with the password database standing in
    /// for an unset `HOME` (as under some service managers).
    ///
    /// ```swift
    /// SQLitePromiseStore.defaultDirectory(environment: ["XDG_STATE_HOME": "/var/state"])  // "/var/state/promised"
    /// SQLitePromiseStore.defaultDirectory(environment: ["HOME": "/home/ada"])  // "/home/ada/.local/state/promised"
    /// ```
    public static func defaultDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return (state as NSString).appendingPathComponent("promised")
        }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? passwordHome()
        // No home at all: a per-user directory that is at least not shared.
        guard let home else { return "/tmp/promised-\(getuid())/state" }
        return (home as NSString).appendingPathComponent(".local/state/promised")
    }

    private static func passwordHome() -> String? {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return nil }
        let home = String(cString: directory)
        return home.hasPrefix("/") ? home : nil
    }
}
