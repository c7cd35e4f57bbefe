import ArgumentParser

/// A first word that names no command, told as such.
///
/// ArgumentParser reads `promisectl reslove x` as two stray arguments of the root
/// command ("2 unexpected arguments: 'reslove', 'x'"), which hides the typo. This names
/// the word and, when one command is close to it, that command. ArgumentParser suggests
/// close names for options only, and its edit distance is internal: hence the small one here.
enum UnknownCommand {
    /// The message for `arguments` (without the program's name), or nil when the first
    /// word is a command, there is none, or an option other than `--socket` comes first
    /// (found as the fast path finds it: ``FastCommandLine/commandPosition(in:)``).
    static func message(for arguments: [String]) -> String? {
        guard let (index, _) = FastCommandLine.commandPosition(in: arguments) else { return nil }
        let word = arguments[index]
        let names = PromiseCtl.configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"]
        guard !names.contains(word) else { return nil }
        var text = "unknown command '\(word)'"
        if let nearest = nearest(to: word, among: names) { text += "; did you mean '\(nearest)'?" }
        return text + " (promisectl --help lists the commands)"
    }

    /// The one name within a third of the word's length in edits (at least one), if any.
    private static func nearest(to word: String, among names: [String]) -> String? {
        let limit = max(1, word.count / 3)
        let close = names.map { ($0, distance(word, $0)) }.filter { $0.1 <= limit }
        guard let best = close.min(by: { $0.1 < $1.1 }),
            close.filter({ $0.1 == best.1 }).count == 1
        else { return nil }
        return best.0
    }

    /// Edits (insert, delete, replace, swap of neighbours) from `a` to `b`: the optimal string
    /// alignment distance, so that a transposed pair of letters counts as one typo.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    best = min(best, table[i - 2][j - 2] + 1)
                }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
