package io.nucx.it;

import io.nucx.ErrorMode;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The peer of {@link ShmOtherUserTest}, run as another user: prints {@code ADDRESS <hex>} of its own shm worker, then
 * tries the given worker's shm socket with a raw {@code connect} ({@code CONNECT ok} or {@code CONNECT refused
 * <reason>}) and prints the lanes its worker would choose to it ({@code LANES <chosen AM lane>}).
 */
public final class ShmStranger {

    public static void main(String[] args) throws Exception {
        WorkerAddress target = WorkerAddress.fromHex(args[0]);
        Path socket = Path.of(args[1]);
        Worker w = new NucxBootstrap().name("stranger").config("TLS", "shm,tcp").start();
        try {
            System.out.println("ADDRESS " + w.address().toHex());
            try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                ch.connect(UnixDomainSocketAddress.of(socket));
                System.out.println("CONNECT ok");
            } catch (IOException e) {
                System.out.println("CONNECT refused " + e.getMessage());
            }
            String info = w.laneInfo(target, ErrorMode.PEER);
            String am = info.lines().filter(l -> l.contains("CHOSEN") && l.contains("AM lane")).findFirst()
                    .orElse("none");
            System.out.println("LANES " + am.trim());
            System.out.flush();
            Thread.sleep(100);
        } finally {
            w.close().get(10, TimeUnit.SECONDS);
        }
    }
}
