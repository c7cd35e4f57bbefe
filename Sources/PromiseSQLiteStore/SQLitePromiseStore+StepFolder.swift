import Foundation
import PromiseModel
import PromiseStore

extension SQLitePromiseStore {
    /// The folder `steps` beside the database, where the monitors of
    /// `then … exec` steps keep their output and write their outcome
    /// (`Registry.stepOutputFolder`): created when missing (mode 0700) and
    /// checked as the store folder is, since what is read there settles steps.
    ///
    /// ```swift
    /// registry.stepOutputFolder = try store.stepOutputFolder()
    /// ```
    ///
    /// - Throws: ``PromiseStoreError`` naming the folder and what is wrong with it.
    public func stepOutputFolder() throws(PromiseStoreError) -> String {
        let folder = ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent("steps")
        try StoreFolder.prepareSubfolder(folder)
        return folder
    }
}
