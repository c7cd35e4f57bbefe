import Glibc
import PromiseModel
import PromiseRPC

/// The file-system side of the daemon's socket: its folder, a stale socket
/// left by a daemon that died, and removing it again at shutdown.
///
/// The folder is created 0700 when missing. An existing folder is looked
/// at with `lstat`, so a symlink is refused rather than followed, and it must
/// belong to this user (or to root, as /tmp does) and be writable by no
/// one else, unless it is sticky (/tmp again: then no one else can remove or
/// replace the socket in it). The default per-user folder under the temp
/// folder must belong to this user and be private, since anyone could have
/// created it first.
///
/// A socket file is removed as stale only when connecting to it is refused
/// (`ECONNREFUSED`: nothing listens). One that accepts is another daemon's
/// and is never stolen; one that cannot be tried (`EACCES`: another user's
/// live socket, say) is left alone and the daemon does not start; anything
/// that is not a socket is left alone.
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
        switch probe(path) {
        case .accepting:
            throw ServerError(.alreadyRunning, "another daemon is already listening on \(path)")
        case .unknown(let error):
            throw ServerError(
                .cannotListen,
                "cannot tell whether a daemon listens on \(path) (connect: \(String(cString: strerror(error)))); "
                    + "it is left alone: remove it or choose another --socket")
        case .refused:
            break
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw ServerError(.cannotListen, "cannot remove the stale socket \(path): \(errnoText())")
        }
    }

    /// What connecting to a socket file tells.
    enum Probe: Equatable {
        /// Something accepts connections: another daemon.
        case accepting
        /// Connecting is refused: nothing listens, the file is stale.
        case refused
        /// Any other failure (the errno): nothing can be concluded.
        case unknown(Int32)
    }

    /// Connects to the socket at `path`, without blocking, so a full
    /// backlog (`EAGAIN`) answers "accepting" at once.
    static func probe(_ path: String) -> Probe {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .unknown(errno) }
        defer { Glibc.close(fd) }
        guard let address = UnixSocketAddress(path: path) else { return .unknown(ENAMETOOLONG) }
        if address.connect(fd) == 0 { return .accepting }
        switch errno {
        case EAGAIN, EINPROGRESS: return .accepting
        case ECONNREFUSED: return .refused
        case let error: return .unknown(error)
        }
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
        if lstat(folder, &status) != 0 {
            guard errno == ENOENT else {
                throw ServerError(.folderUnusable, "cannot inspect \(folder): \(errnoText())")
            }
            try makeFolders(folder)
            return
        }
        guard status.st_mode & S_IFMT != S_IFLNK else {
            throw ServerError(.folderUnusable,
                              "\(folder) is a symbolic link; give the real folder in --socket")
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw ServerError(.folderUnusable, "\(folder) is not a folder")
        }
        // Whoever can write to the folder can replace the socket with their own.
        guard status.st_uid == getuid() || status.st_uid == 0 else {
            throw ServerError(.folderUnusable,
                              "\(folder) belongs to uid \(status.st_uid), not to uid \(getuid()); choose another --socket")
        }
        guard status.st_mode & 0o022 == 0 || status.st_mode & S_ISVTX != 0 else {
            throw ServerError(.folderUnusable,
                              "\(folder) is writable by other users and not sticky; choose another --socket")
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
