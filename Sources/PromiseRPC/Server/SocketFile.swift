import Glibc

/// The file-system side of the daemon's socket: its folder, a stale socket
/// left by a daemon that died, and removing it again at shutdown.
///
/// The folder is created 0700 when missing. A socket file that nothing
/// accepts on (connect is refused) is stale and replaced; one that accepts is
/// another daemon's and is never stolen; anything that is not a socket is
/// left alone. The default per-user folder under the temp folder must belong
/// to this user and be private, since anyone could have created it first.
enum SocketFile {
    /// `sun_path` holds 108 bytes, the terminating NUL included.
    static let maxPathBytes = UnixSocketAddress.maxPathBytes

    /// Makes `path` ready for `bind`.
    static func prepare(_ path: String) throws(ServerError) {
        guard path.utf8.count <= maxPathBytes else {
            throw ServerError(.socketPathTooLong,
                              "socket path is \(path.utf8.count) bytes, more than the \(maxPathBytes) a Unix socket allows: \(path)")
        }
        guard !path.isEmpty else {
            throw ServerError(.cannotListen, "socket path is empty")
        }
        try prepareFolder(of: path)

        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw ServerError(.cannotListen, "cannot inspect \(path): \(errnoText())")
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            throw ServerError(.notASocket, "\(path) exists and is not a socket; remove it or choose another --socket")
        }
        if isAccepting(path) {
            throw ServerError(.alreadyRunning, "another daemon is already listening on \(path)")
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw ServerError(.cannotListen, "cannot remove the stale socket \(path): \(errnoText())")
        }
    }

    /// Whether something accepts connections on the socket at `path`.
    /// Non-blocking, so a full backlog (`EAGAIN`) answers "yes" at once.
    static func isAccepting(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        guard let address = UnixSocketAddress(path: path) else { return false }
        return address.connect(fd) == 0 || errno == EAGAIN || errno == EINPROGRESS
    }

    /// The device and inode of the socket file, to remove it at shutdown
    /// only if it is still ours.
    static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return (UInt64(status.st_dev), UInt64(status.st_ino))
    }

    /// Removes the socket file if it is still the one this server bound.
    static func remove(_ path: String, ifIdentity identity: (device: UInt64, inode: UInt64)?) {
        guard let identity, let current = Self.identity(of: path),
              current.device == identity.device, current.inode == identity.inode else { return }
        unlink(path)
    }

    private static func prepareFolder(of path: String) throws(ServerError) {
        let folder = parentFolder(of: path)
        var status = stat()
        if stat(folder, &status) != 0 {
            guard errno == ENOENT else {
                throw ServerError(.folderUnusable, "cannot inspect \(folder): \(errnoText())")
            }
            try makeFolders(folder)
            return
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw ServerError(.folderUnusable, "\(folder) is not a folder")
        }
        if isPerUserTemporaryFolder(folder) {
            guard status.st_uid == getuid(), status.st_mode & 0o077 == 0 else {
                throw ServerError(.folderUnusable,
                                  "\(folder) must belong to uid \(getuid()) and be private (0700); remove it or choose another --socket")
            }
        }
    }

    /// `mkdir -p` with mode 0700 for every folder it creates.
    private static func makeFolders(_ folder: String) throws(ServerError) {
        var prefix = folder.hasPrefix("/") ? "" : "."
        for component in folder.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw ServerError(.folderUnusable, "cannot create \(prefix): \(errnoText())")
            }
        }
        // mkdir honours the umask; make the last folder exactly 0700.
        if chmod(folder, 0o700) != 0 {
            throw ServerError(.folderUnusable, "cannot set the mode of \(folder): \(errnoText())")
        }
    }

    private static func parentFolder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let folder = String(path[..<slash])
        return folder.isEmpty ? "/" : folder
    }

    /// `…/promised-<uid>`: the folder ``SocketPath`` picks under the temp folder.
    private static func isPerUserTemporaryFolder(_ folder: String) -> Bool {
        folder.hasSuffix("/promised-\(getuid())")
    }

    private static func errnoText() -> String {
        String(cString: strerror(errno))
    }
}
