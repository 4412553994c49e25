package io.nucx.transport.tcp;

import io.netty.channel.Channel;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.nucx.transport.NucxConfig;

import java.io.File;
import java.net.InetSocketAddress;
import javax.net.ssl.SSLException;

/**
 * TLS on tcp lanes (NUCX_TCP_TLS): Netty's {@link SslHandler} first in every tcp lane's pipeline, certificates and
 * keys from PEM files, OpenSSL (netty-tcnative-boringssl-static) when it loads, the JDK's TLS otherwise. Every worker
 * is a server for the lanes it accepts and a client for those it connects, with the same certificate; a client
 * checks the server's chain against NUCX_TCP_TLS_CA, and with NUCX_TCP_TLS_MUTUAL the server checks the client's too.
 * Peers are reached by IP address, so no host name is checked: the CA is what admits a peer. Both sides of a lane
 * must agree on TLS; a plaintext peer fails the handshake, and the lane closes naming it.
 */
final class TcpTls {

    private final SslContext server;
    private final SslContext client;
    private final SslProvider provider;

    private TcpTls(SslContext server, SslContext client, SslProvider provider) {
        this.server = server;
        this.client = client;
        this.provider = provider;
    }

    /**
     * The contexts for {@code cert} (PEM chain), {@code key} (PEM PKCS#8) and {@code ca} (PEM certificates the peers'
     * chains must lead to); {@code mutual}: accepted lanes require a client certificate.
     */
    static TcpTls of(File cert, File key, File ca, boolean mutual, SslProvider forced) throws SSLException {
        SslProvider provider = forced != null ? forced : OpenSsl.isAvailable() ? SslProvider.OPENSSL : SslProvider.JDK;
        SslContext server = SslContextBuilder.forServer(cert, key).sslProvider(provider).trustManager(ca)
                .clientAuth(mutual ? ClientAuth.REQUIRE : ClientAuth.NONE).build();
        // No host name check (Netty 4.2 checks HTTPS names by default): lanes are dialled by IP address, and the CA
        // is what admits a peer.
        SslContext client = SslContextBuilder.forClient().sslProvider(provider).trustManager(ca)
                .keyManager(cert, key).endpointIdentificationAlgorithm(null).build();
        return new TcpTls(server, client, provider);
    }

    /** The contexts {@code config} asks for (NUCX_TCP_TLS and its files), or null when TLS is off. */
    static TcpTls from(NucxConfig config) throws SSLException {
        if (!config.get(TcpConfig.TLS)) {
            return null;
        }
        SslProvider forced = switch (config.get(TcpConfig.TLS_PROVIDER)) {
            case "openssl" -> SslProvider.OPENSSL;
            case "jdk" -> SslProvider.JDK;
            default -> null;
        };
        return of(new File(config.get(TcpConfig.TLS_CERT).trim()), new File(config.get(TcpConfig.TLS_KEY).trim()),
                new File(config.get(TcpConfig.TLS_CA).trim()), config.get(TcpConfig.TLS_MUTUAL), forced);
    }

    /** The handler of a lane a peer connected. */
    SslHandler accepted(Channel ch) {
        return server.newHandler(ch.alloc());
    }

    /** The handler of a lane we connect to {@code remote}. */
    SslHandler connected(Channel ch, InetSocketAddress remote) {
        return client.newHandler(ch.alloc(), remote.getHostString(), remote.getPort());
    }

    SslProvider provider() {
        return provider;
    }
}
