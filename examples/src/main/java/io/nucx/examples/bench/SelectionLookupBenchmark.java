package io.nucx.examples.bench;

import io.nucx.protocol.EndpointConfig;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.select.SelectionCache;
import io.nucx.protocol.select.SelectionKey;
import io.nucx.protocol.tag.EagerProtocols;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.transport.Capability;
import io.nucx.transport.IfaceAttributes;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What protocol selection costs a send once the tables exist: the key compare (or hash lookup when the key changes)
 * plus the scan of a few ranges. Run: {@code bin/nucx-jmh SelectionLookup} (see BENCHMARKS.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class SelectionLookupBenchmark {

    @Param({"8", "100000", "67108864"})
    long size;

    private SelectionCache cache;
    private long heapKey;
    private long directKey;
    private boolean flip;

    @Setup
    public void setUp() {
        List<Protocol> registry = List.of(EagerProtocols.SHORT, EagerProtocols.SINGLE_BCOPY,
                EagerProtocols.MULTI_BCOPY, RndvProtocols.TAG_RNDV);
        EndpointConfig tcp = new EndpointConfig("tcp/lo", new IfaceAttributes(
                EnumSet.of(Capability.AM_SHORT, Capability.AM_BCOPY), 8192, 65536, 64, 5.26e-6, 0, 0, 1.18e9, 50e-6, 0));
        cache = new SelectionCache(registry, tcp, SelectionKey.Locality.INTER_NODE, ProtoCandidate.AUTO,
                ProtoCandidate.AUTO, null);
        heapKey = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0, SelectionKey.DatatypeClass.CONTIG,
                SelectionKey.MemoryType.HEAP, SelectionKey.Locality.INTER_NODE);
        directKey = SelectionKey.pack(SelectionKey.Operation.TAG_SEND, 0, SelectionKey.DatatypeClass.CONTIG,
                SelectionKey.MemoryType.DIRECT, SelectionKey.Locality.INTER_NODE);
        cache.table(heapKey);
        cache.table(directKey);
    }

    /** The same key send after send: the one-entry cache, then the range scan. */
    @Benchmark
    public Protocol sameKey() {
        return cache.table(heapKey).lookup(size).protocol();
    }

    /** Keys alternating send after send: a hash lookup each time, then the range scan. */
    @Benchmark
    public Protocol alternatingKeys() {
        flip = !flip;
        return cache.table(flip ? heapKey : directKey).lookup(size).protocol();
    }
}
