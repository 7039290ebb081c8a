public import NIOSSL

/// The TLS settings the uploader uses for `https` hosts: the system's trust store, plus the
/// certificate authorities of `--ca-file` (a private CA, a test host).
public enum UpstreamTLS {
    /// Why a CA file cannot be used.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What is wrong and what to do.
        public var description: String
    }

    /// A client configuration trusting the system's roots and those of `caFile`.
    ///
    /// - Throws: ``Failure`` naming the file when it cannot be read or holds no PEM certificate.
    public static func clientConfiguration(trusting caFile: String?) throws(Failure) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        guard let caFile else { return configuration }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(caFile)
        } catch {
            throw Failure(description: "--ca-file \(caFile): cannot read PEM certificates (\(error)); give a readable PEM file of CA certificates")
        }
        guard !certificates.isEmpty else {
            throw Failure(description: "--ca-file \(caFile): no certificate in the file; give a PEM file of CA certificates")
        }
        configuration.additionalTrustRoots = [.certificates(certificates)]
        return configuration
    }
}
