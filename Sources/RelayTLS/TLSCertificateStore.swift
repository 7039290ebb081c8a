import NIOConcurrencyHelpers
public import NIOSSL

/// The listener's TLS settings, loaded from PEM files and reloadable while the server runs.
///
/// Every new connection takes the context current at its accept; connections already open keep
/// theirs, so a reload (SIGHUP) never drops a connection or a request under way.
public final class TLSCertificateStore: Sendable {
    /// Why the TLS files cannot be used.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What is wrong, naming the file, and what to do.
        public var description: String
    }

    /// The PEM files: the certificate chain (leaf first), its private key, and optionally the CAs
    /// whose client certificates are required.
    public struct Files: Sendable, Hashable {
        /// The certificate chain, leaf first.
        public var certificate: String
        /// The private key of the leaf certificate.
        public var key: String
        /// CA certificates a client must present a certificate from; `nil`: no client certificates.
        public var clientCertificateAuthorities: String?

        /// The files of a listener.
        public init(certificate: String, key: String, clientCertificateAuthorities: String? = nil) {
            self.certificate = certificate
            self.key = key
            self.clientCertificateAuthorities = clientCertificateAuthorities
        }
    }

    /// The files read on each (re)load.
    public let files: Files
    private let context: NIOLockedValueBox<NIOSSLContext>

    /// Loads `files`.
    ///
    /// - Throws: ``Failure`` naming the file that cannot be read or used.
    public init(files: Files) throws(Failure) {
        self.files = files
        self.context = NIOLockedValueBox(try Self.load(files))
    }

    /// The context new connections use.
    public var current: NIOSSLContext { context.withLockedValue { $0 } }

    /// Reads the files again and uses them for connections accepted from now on.
    ///
    /// - Throws: ``Failure`` when the new files cannot be used; the previous ones stay in force.
    public func reload() throws(Failure) {
        let fresh = try Self.load(files)
        context.withLockedValue { $0 = fresh }
    }

    /// TLS 1.2 and 1.3, HTTP/1.1, and client certificates when asked for.
    static func load(_ files: Files) throws(Failure) -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificate)
        } catch {
            throw Failure(
                description:
                    "--tls-cert \(files.certificate): cannot read a PEM certificate chain (\(error)); give the server certificate, leaf first, in PEM"
            )
        }
        guard !chain.isEmpty else {
            throw Failure(description: "--tls-cert \(files.certificate): no certificate in the file; give a PEM certificate chain")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: files.key, format: .pem)
        } catch {
            throw Failure(
                description: "--tls-key \(files.key): cannot read a PEM private key (\(error)); give the certificate's unencrypted private key in PEM"
            )
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        if let authorities = files.clientCertificateAuthorities {
            let roots: [NIOSSLCertificate]
            do {
                roots = try NIOSSLCertificate.fromPEMFile(authorities)
            } catch {
                throw Failure(description: "--tls-client-ca \(authorities): cannot read PEM CA certificates (\(error))")
            }
            guard !roots.isEmpty else { throw Failure(description: "--tls-client-ca \(authorities): no certificate in the file") }
            configuration.trustRoots = .certificates(roots)
            // A server checks the client's chain; a client certificate names no host to match.
            configuration.certificateVerification = .noHostnameVerification
        }
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw Failure(
                description:
                    "--tls-cert \(files.certificate) / --tls-key \(files.key): cannot be used together (\(error)); check that the key belongs to the certificate"
            )
        }
    }
}
