package io.nucx.transport.shm;

import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoop;
import io.nucx.transport.AbstractTransport;
import io.nucx.transport.Availability;
import io.nucx.transport.Device;
import io.nucx.transport.Iface;
import io.nucx.transport.IfaceParams;
import io.nucx.transport.PolledIoHandle;
import io.nucx.transport.config.ConfigTable;

import java.nio.file.Files;

/**
 * Shared-memory transport between processes of one host: a ring per direction per connection in a file under
 * {@code /dev/shm}, mapped with FFM; channels run on loops whose engine is a {@link ShmIoHandler}.
 */
public final class ShmTransport extends AbstractTransport {

    public static final String NAME = "shm";
    public static final Device MEMORY = memoryDevice(NAME);

    public ShmTransport() {
        super(NAME);
    }

    @Override
    public Availability availability() {
        if (!Files.isDirectory(ShmFiles.DIR) || !Files.isWritable(ShmFiles.DIR)) {
            return Availability.unavailable("shm: " + ShmFiles.DIR + " is not a writable directory");
        }
        return Availability.available();
    }

    @Override
    public Availability availabilityOn(EventLoop loop) {
        return isCompatible(loop) ? Availability.available() : Availability.unavailable("shm: the event loop "
                + "was not made with ShmIoHandler.newFactory(...), so it cannot poll rings (" + loop.getClass()
                .getSimpleName() + ")");
    }

    static boolean isCompatible(EventLoop loop) {
        return loop instanceof IoEventLoop io && io.isCompatible(PolledIoHandle.class);
    }

    @Override
    public ConfigTable configTable() {
        return ShmConfig.TABLE;
    }

    @Override
    public Iface openIface(IfaceParams params) throws Exception {
        return ShmIface.open(this, params, ShmFiles.DIR);
    }
}
