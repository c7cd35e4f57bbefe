import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `make install`'s script (scripts/install.sh), run on the debug binaries
/// the tests use into a temporary DESTDIR: `make install` itself only builds
/// release first and passes the release folder.
@Suite("make install")
struct InstallTests {
    @Test("install puts both binaries, bash, zsh and fish completions and a systemd user unit under DESTDIR/PREFIX")
    func installIntoDestdir() throws {
        // Arrange.
        var template = Array("/tmp/pinst-XXXXXX".utf8CString)
        let destdir = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: destdir) }
        let script = E2EBinaries.packageRoot.appendingPathComponent("scripts/install.sh").path

        // Act.
        let result = try E2ECommand.run(script, [E2EBinaries.folder.path, destdir, "/opt/pt"], timeout: .seconds(60))

        // Assert.
        #expect(result.status == 0, "\(result)")
        let root = destdir + "/opt/pt"
        for tool in ["promised", "promisectl"] {
            #expect(FileManager.default.isExecutableFile(atPath: "\(root)/bin/\(tool)"), "\(tool)")
            for (completion, marker) in [
                ("share/bash-completion/completions/\(tool)", "complete "),
                ("share/zsh/site-functions/_\(tool)", "#compdef \(tool)"),
                ("share/fish/vendor_completions.d/\(tool).fish", "complete -c '\(tool)'"),
            ] {
                let text = (try? String(contentsOfFile: "\(root)/\(completion)", encoding: .utf8)) ?? ""
                #expect(text.contains(marker), "\(completion)")
            }
        }
        #expect(try E2ECommand.run("\(root)/bin/promisectl", ["--version"]).stdout == "0.1.0\n")
        let unit = (try? String(contentsOfFile: "\(root)/lib/systemd/user/promised.service", encoding: .utf8)) ?? ""
        #expect(unit.contains("ExecStart=/opt/pt/bin/promised\n"), "\(unit)")
        #expect(unit.contains("WantedBy=default.target"))
        #expect(unit.contains("Type=notify\n"), "\(unit)")
    }
}
