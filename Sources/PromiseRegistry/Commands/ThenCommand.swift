import PromiseStore

/// `then`: a child promise of `parentID` that settles as its parent does,
/// unless its ``ExecStep`` runs when the parent settles as `on` selects
/// (docs/PROTOCOL.md, "then and exec").
package struct ThenCommand {
    package var parentID: String
    /// The child's id; nil: one the registry makes.
    package var childID: String?
    package var on: ThenTrigger
    /// The command that settles the child; nil: the child settles as its parent.
    package var step: ExecStep?
    package var ifExists: IfExists
    /// Forget a settled promise of the same id first.
    package var replace: Bool

    /// Refuses `replace` beside `ifExists: .get`, and a child that would
    /// replace its own parent.
    package init(
        parentID: String, childID: String?, on: ThenTrigger = .fulfilled, step: ExecStep? = nil,
        ifExists: IfExists = .error, replace: Bool = false
    ) throws(RegistryError) {
        try ifExists.check(replace: replace)
        if replace && childID == parentID {
            throw .invalidArgument(param: "childId", reason: "a child cannot replace its own parent")
        }
        self.parentID = parentID
        self.childID = childID
        self.on = on
        self.step = step
        self.ifExists = ifExists
        self.replace = replace
    }
}

/// The command a `then … exec` step runs: its program and arguments, where,
/// with which extra variables, in which pool, and how often it runs again
/// after failing. Its stdin is the parent's outcome, written when it starts.
package struct ExecStep {
    package var argv: [String]
    package var cwd: String?
    package var env: [String: String]
    /// Its pool; nil: the `default` pool.
    package var pool: String?
    /// How many times a failed command runs again.
    package var retries: Int
    /// How long a failed command waits before it runs again.
    package var retryDelayMilliseconds: UInt64

    /// The most `retries` takes, and the longest `retryDelayMilliseconds` (an hour).
    package static let maxRetries = 100
    package static let maxRetryDelayMilliseconds = 3_600_000

    /// Refuses an `argv` without a program, a NUL in what runs and a faulty
    /// variable name.
    package init(
        argv: [String], cwd: String? = nil, env: [String: String] = [:], pool: String? = nil, retries: Int = 0,
        retryDelayMilliseconds: UInt64 = 0
    ) throws(RegistryError) {
        guard let program = argv.first, !program.isEmpty else {
            throw .invalidArgument(
                param: "exec", reason: "\"exec\" must name a program to run: [\"program\", \"arg\", …]")
        }
        if let problem = ProcessSpec(argv: argv, cwd: cwd, env: env).problem {
            throw .invalidArgument(param: problem.param, reason: problem.reason)
        }
        self.argv = argv
        self.cwd = cwd
        self.env = env
        self.pool = pool
        self.retries = retries
        self.retryDelayMilliseconds = retryDelayMilliseconds
    }

    /// What runs, keeping at most `outputLimit` bytes of its output.
    package func processSpec(outputLimit: Int) -> ProcessSpec {
        ProcessSpec(argv: argv, cwd: cwd, env: env, outputLimit: outputLimit)
    }
}
