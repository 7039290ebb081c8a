public import NIOSSL

/// The TLS settings the uploader uses for `https` hosts: the system's trust store, plus the
/// certificate authorities of `--ca-file` (a private CA, a test host).
public enum UpstreamTLS {
    /// Why a CA file cannot be used.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What is wrong and what to do.
        public var description: String
    }

    /// A certificate the uploader presents to the host (a central relay started with
    /// `--tls-client-ca`): the PEM files of its chain (leaf first) and of its private key.
    public struct ClientCertificate: Sendable, Hashable {
        /// The PEM file of the certificate chain, the relay's own certificate first.
        public var certificateFile: String
        /// The PEM file of the certificate's private key.
        public var keyFile: String

        /// The certificate in `certificateFile`, with its key in `keyFile`.
        public init(certificateFile: String, keyFile: String) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// A client configuration trusting the system's roots and those of `caFile`, presenting
    /// `clientCertificate` when the host asks for one.
    ///
    /// - Throws: ``Failure`` naming the file when one cannot be read, holds no PEM certificate, or
    ///   (the key) no PEM private key.
    public static func clientConfiguration(trusting caFile: String?, presenting clientCertificate: ClientCertificate? = nil) throws(Failure)
        -> TLSConfiguration
    {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let clientCertificate {
            let chain: [NIOSSLCertificate]
            do {
                chain = try NIOSSLCertificate.fromPEMFile(clientCertificate.certificateFile)
            } catch {
                throw Failure(
                    description:
                        "--upstream-client-cert \(clientCertificate.certificateFile): cannot read PEM certificates (\(error)); give a readable PEM file, the relay's certificate first"
                )
            }
            guard !chain.isEmpty else {
                throw Failure(
                    description: "--upstream-client-cert \(clientCertificate.certificateFile): no certificate in the file; give a PEM certificate")
            }
            let key: NIOSSLPrivateKey
            do {
                key = try NIOSSLPrivateKey(file: clientCertificate.keyFile, format: .pem)
            } catch {
                throw Failure(
                    description:
                        "--upstream-client-key \(clientCertificate.keyFile): cannot read a PEM private key (\(error)); give the key of --upstream-client-cert"
                )
            }
            configuration.certificateChain = chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(key)
        }
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
