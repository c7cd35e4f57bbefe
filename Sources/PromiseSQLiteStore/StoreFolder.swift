import Glibc
import PromiseModel
import PromiseStore

/// The store folder and the files in it, checked before the daemon trusts
/// them: whoever can write a store can make the daemon run commands (a
/// queued `then … exec` step starts when the daemon does), as the daemon's
/// user.
///
/// - The folder is created (mode 0700, and so is every missing parent it
///   creates) when missing. An existing one is looked at without following
///   a symbolic link (`lstat`): a link is refused, since whoever owns it
///   can point it elsewhere. The folder must belong to the daemon's user and
///   be writable by no one else.
/// - Every folder above it (after symbolic links there are resolved) must
///   belong to the daemon's user or to root and be writable by no one else
///   unless it is sticky (as /tmp is): whoever can write to a parent can
///   rename the store folder and put another in its place.
/// - A file of the store that exists (the database, its `-wal`, `-shm` and
///   `-journal` companions, the lock file) must be a plain file, not a
///   link, belonging to the daemon's user and writable by no one else.
///
/// Each refusal says what is wrong and the command that fixes it.
enum StoreFolder {
    /// Creates `directory` when missing and checks it and its parents.
    static func prepare(_ directory: String) throws(PromiseStoreError) {
        guard !directory.isEmpty else { throw PromiseStoreError("the store folder is empty: give a folder in --store") }
        var status = stat()
        if lstat(directory, &status) != 0 {
            guard errno == ENOENT else {
                throw PromiseStoreError("cannot inspect the store folder \(directory): \(errnoText())")
            }
            try makeFolders(directory)
            guard lstat(directory, &status) == 0 else {
                throw PromiseStoreError("cannot inspect the store folder \(directory): \(errnoText())")
            }
        }
        try checkFolder(directory, status)
        try checkParents(of: directory)
    }

    /// Creates `folder`, a folder inside a checked store folder, when
    /// missing (mode 0700), and checks it as the store folder is checked:
    /// not a link, this user's, writable by no one else.
    static func prepareSubfolder(_ folder: String) throws(PromiseStoreError) {
        if mkdir(folder, 0o700) != 0 && errno != EEXIST {
            throw PromiseStoreError("cannot create the folder \(folder): \(errnoText())")
        }
        var status = stat()
        guard lstat(folder, &status) == 0 else {
            throw PromiseStoreError("cannot inspect the folder \(folder): \(errnoText())")
        }
        try checkFolder(folder, status)
    }

    /// Checks a file of the store when it exists; a missing one is fine (it
    /// is created inside a folder only the daemon's user can write to).
    static func checkFile(_ path: String) throws(PromiseStoreError) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw PromiseStoreError("cannot inspect the store file \(path): \(errnoText())")
        }
        try checkFile(path, status)
    }

    /// Checks what `fstat` or `lstat` said of a file of the store.
    static func checkFile(_ path: String, _ status: stat) throws(PromiseStoreError) {
        let type = status.st_mode & S_IFMT
        guard type != S_IFLNK else {
            throw PromiseStoreError(
                "the store file \(path) is a symbolic link; a store's files must be plain files: remove the link")
        }
        guard type == S_IFREG else {
            throw PromiseStoreError("the store file \(path) is not a plain file: remove it")
        }
        let user = geteuid()
        guard status.st_uid == user else {
            throw PromiseStoreError(
                "the store file \(path) belongs to \(describe(uid: status.st_uid)), not to \(describe(uid: user)) "
                    + "that this daemon runs as; whoever owns it can change what the daemon runs: "
                    + "`chown \(user) \(path)` if its content is yours, or remove it")
        }
        guard status.st_mode & 0o022 == 0 else {
            throw PromiseStoreError(
                "the store file \(path) is writable by other users (mode \(octal(status.st_mode))); "
                    + "they could change what the daemon runs: `chmod 600 \(path)` if its content is yours, or remove it")
        }
    }

    private static func checkFolder(_ directory: String, _ status: stat) throws(PromiseStoreError) {
        let type = status.st_mode & S_IFMT
        guard type != S_IFLNK else {
            throw PromiseStoreError(
                "the store folder \(directory) is a symbolic link; whoever owns the link can point it at "
                    + "another store: give the real folder in --store")
        }
        guard type == S_IFDIR else {
            throw PromiseStoreError("the store folder \(directory) is not a folder: choose another --store")
        }
        let user = geteuid()
        guard status.st_uid == user else {
            throw PromiseStoreError(
                "the store folder \(directory) belongs to \(describe(uid: status.st_uid)), not to "
                    + "\(describe(uid: user)) that this daemon runs as; whoever owns it can put commands in it "
                    + "that the daemon runs: `chown -R \(user) \(directory)` if its content is yours, "
                    + "or choose another --store")
        }
        guard status.st_mode & 0o022 == 0 else {
            throw PromiseStoreError(
                "the store folder \(directory) is writable by other users (mode \(octal(status.st_mode))); "
                    + "they could put commands in it that the daemon runs: `chmod 700 \(directory)`")
        }
    }

    /// Every folder from `/` down to the store folder's parent, as the kernel
    /// reaches it (`realpath`).
    private static func checkParents(of directory: String) throws(PromiseStoreError) {
        guard let resolved = realpath(directory, nil) else {
            throw PromiseStoreError("cannot resolve the store folder \(directory): \(errnoText())")
        }
        let real = String(cString: resolved)
        free(resolved)
        let user = geteuid()
        var parent = ""
        for component in real.split(separator: "/").dropLast() {
            parent += "/" + component
            try checkParent(parent, of: directory, user: user)
        }
        try checkParent("/", of: directory, user: user)
    }

    private static func checkParent(_ parent: String, of directory: String, user: uid_t) throws(PromiseStoreError) {
        var status = stat()
        guard lstat(parent, &status) == 0 else {
            throw PromiseStoreError("cannot inspect \(parent), above the store folder \(directory): \(errnoText())")
        }
        guard status.st_uid == user || status.st_uid == 0 else {
            throw PromiseStoreError(
                "the store folder \(directory) is inside \(parent), which belongs to \(describe(uid: status.st_uid)); "
                    + "that user could put another store in its place: choose a --store inside folders of "
                    + "\(describe(uid: user)) or root")
        }
        guard status.st_mode & 0o022 == 0 || status.st_mode & S_ISVTX != 0 else {
            throw PromiseStoreError(
                "the store folder \(directory) is inside \(parent), which other users can write to and which is "
                    + "not sticky (mode \(octal(status.st_mode))); they could put another store in its place: "
                    + "`chmod go-w \(parent)` or choose another --store")
        }
    }

    /// `mkdir -p`, each folder it creates with mode 0700 whatever the umask.
    private static func makeFolders(_ directory: String) throws(PromiseStoreError) {
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) == 0 {
                guard chmod(prefix, 0o700) == 0 else {
                    throw PromiseStoreError("cannot set the mode of \(prefix) to 0700: \(errnoText())")
                }
            } else if errno != EEXIST {
                throw PromiseStoreError("cannot create the store folder \(prefix): \(errnoText())")
            }
        }
    }

    /// "uid 65534 (nobody)", or "uid 1234" for a uid with no name.
    private static func describe(uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "uid \(uid) (\(String(cString: name)))"
    }

    private static func octal(_ mode: mode_t) -> String {
        "0" + String(mode & 0o7777, radix: 8)
    }

    private static func errnoText() -> String {
        String(cString: strerror(errno))
    }
}
