package io.nucx.examples.perf;

import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.ProtocolCounters;
import io.nucx.protocol.ProtocolRegistry;
import io.nucx.protocol.ProtocolSettings;
import io.nucx.protocol.WorkerProtocols;
import io.nucx.protocol.select.ProtoTable;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import io.nucx.transport.NucxConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.EnumSet;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The settings that force a protocol, through the real settings parser and selection engine: the protocol is chosen
 * at a size the cost model gives to another one, and what it cannot send (0-byte control messages from heap memory)
 * still has a protocol.
 */
class ForcedProtocolTest {

    private static final EndpointConfig TCP = new EndpointConfig("tcp/lo", new IfaceAttributes(EnumSet.of(
            Capability.AM_SHORT, Capability.AM_BCOPY, Capability.AM_ZCOPY), 8192, 65536, 256, 5.2e-6, 0, 0, 1.2e9,
            50e-6, 0, 0, 1024));
    private static final IfaceAttributes SHM = new IfaceAttributes(EnumSet.of(Capability.AM_SHORT,
            Capability.AM_BCOPY), 100, 65536, 256, 80e-9, 0, 12179e6, 0, 10e-9, 0, 0, Integer.MAX_VALUE);
    private static final IfaceAttributes CMA = new IfaceAttributes(EnumSet.of(Capability.GET_ZCOPY,
            Capability.PUT_ZCOPY), 0, 0, 0, 80e-9, 0, 11145e6, 0, 2e-6, 0, Long.MAX_VALUE, Integer.MAX_VALUE,
            512 * 1024);
    private static final EndpointConfig SHM_CMA = new EndpointConfig("shm/memory", SHM, "cma/memory", CMA);

    private static long key(SelectionKey.MemoryType mem) {
        return SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0, SelectionKey.DatatypeClass.CONTIG, mem,
                SelectionKey.Locality.INTER_NODE);
    }

    private static ProtoTable table(Map<String, String> settings, EndpointConfig lanes, SelectionKey.MemoryType mem) {
        ProtocolSettings s = ProtocolSettings.from(NucxConfig.of(settings, Map.of()).validate(),
                ProtocolRegistry.DEFAULT);
        return new WorkerProtocols(ImmediateEventExecutor.INSTANCE, ByteBufAllocator.DEFAULT, s, 1,
                new ProtocolCounters()).selectionCache(lanes, SelectionKey.Locality.INTER_NODE).table(key(mem));
    }

    @ParameterizedTest(name = "{0} at {2} B over {1}")
    @CsvSource({
            "egr/short, tcp, 100",
            "egr/single/bcopy, tcp, 100",
            "egr/multi/bcopy, tcp, 100",
            "tag/rndv, tcp, 100",
            "egr/single/zcopy, tcp, 4096",
            "egr/multi/zcopy, tcp, 100000",
            "egr/single/bcopy, shm+cma, 60000",
            "rndv/get/zcopy, shm+cma, 1000",
            "rndv/put/zcopy, shm+cma, 1000",
            "tag/rndv, shm+cma, 1000000"})
    void theForcedProtocolCarriesASizeTheModelGivesAnotherAndControlMessagesStillGo(String protocol, String lanes,
                                                                                   long size) {
        EndpointConfig config = lanes.equals("tcp") ? TCP : SHM_CMA;
        ProtoTable auto = table(Map.of(), config, SelectionKey.MemoryType.DIRECT);
        ProtoTable forced = table(ForcedProtocol.settings(protocol), config, SelectionKey.MemoryType.DIRECT);
        assertFalse(protocol.equals(auto.lookup(size).protocol().name()) && !protocol.equals("egr/short"),
                "pick a size where the model would choose another protocol\n" + auto.format("auto"));
        assertEquals(protocol, forced.lookup(size).protocol().name(), forced.format("forced " + protocol));
        assertNotNull(table(ForcedProtocol.settings(protocol), config, SelectionKey.MemoryType.HEAP).lookup(0),
                "0-byte heap control messages need a protocol too");
        assertTrue(ForcedProtocol.canForce(protocol));
    }

    @Test
    void anUnknownProtocolCannotBeForced() {
        assertFalse(ForcedProtocol.canForce("am/egr/short"));
        assertThrows(IllegalArgumentException.class, () -> ForcedProtocol.settings("am/egr/short"));
    }
}
