package io.nucx.protocol;

import io.nucx.protocol.select.PerfProfile;
import io.nucx.protocol.select.ProtoCandidate;
import io.nucx.protocol.select.Protocol;
import io.nucx.protocol.tag.RndvProtocols;
import io.nucx.protocol.tag.RndvScheme;
import io.nucx.transport.NucxConfig;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The protocol layer's settings, parsed once when a worker starts.
 *
 * @param maxMessageSize the largest message a receiver accepts (NUCX_MAX_MSG_SIZE), checked before allocating
 * @param bcopyThresh    NUCX_BCOPY_THRESH, or {@link ProtoCandidate#AUTO}
 * @param zcopyThresh    NUCX_ZCOPY_THRESH, {@link ProtoCandidate#AUTO} or {@link ProtoCandidate#DISABLED}
 * @param rndvThresh     NUCX_RNDV_THRESH, or {@link ProtoCandidate#AUTO}
 * @param protoInfo      print each protocol table when it is built (NUCX_PROTO_INFO)
 * @param scheme         the rendezvous data protocol receivers ask for (NUCX_RNDV_SCHEME)
 * @param protocols      the protocols selection may choose: the registry's, filtered by NUCX_PROTOS and the scheme
 * @param profile        the measured figures the cost model uses where it has them (NUCX_PERF_PROFILE), or
 *                       {@link PerfProfile#NONE}
 * @param eagerMax       NUCX_EAGER_MAX: with {@code rndvThresh} automatic, the largest message sent eagerly where a
 *                       rendezvous can carry it; {@link ProtoCandidate#NEVER}: no bound
 */
public record ProtocolSettings(long maxMessageSize, long bcopyThresh, long zcopyThresh, long rndvThresh,
                               boolean protoInfo, RndvScheme scheme, List<Protocol> protocols, PerfProfile profile,
                               long eagerMax) {

    public ProtocolSettings {
        protocols = List.copyOf(protocols);
        Objects.requireNonNull(profile, "profile");
    }

    /** Settings with no bound on eager sizes (cost decides at every size). */
    public ProtocolSettings(long maxMessageSize, long bcopyThresh, long zcopyThresh, long rndvThresh,
                            boolean protoInfo, RndvScheme scheme, List<Protocol> protocols, PerfProfile profile) {
        this(maxMessageSize, bcopyThresh, zcopyThresh, rndvThresh, protoInfo, scheme, protocols, profile,
                ProtoCandidate.NEVER);
    }

    /** Settings whose cost model uses the transports' static estimates only. */
    public ProtocolSettings(long maxMessageSize, long bcopyThresh, long zcopyThresh, long rndvThresh,
                            boolean protoInfo, RndvScheme scheme, List<Protocol> protocols) {
        this(maxMessageSize, bcopyThresh, zcopyThresh, rndvThresh, protoInfo, scheme, protocols, PerfProfile.NONE);
    }

    /** Every protocol of {@code registry}, thresholds automatic, the default scheme: for tests and tools. */
    public static ProtocolSettings defaults(ProtocolRegistry registry) {
        return new ProtocolSettings(1L << 30, ProtoCandidate.AUTO, ProtoCandidate.AUTO, ProtoCandidate.AUTO, false,
                RndvScheme.AUTO, enabled(registry.protocols(), RndvScheme.AUTO));
    }

    /** The settings {@code config} gives ({@link ProtocolConfig}), with {@code registry}'s protocols. */
    public static ProtocolSettings from(NucxConfig config, ProtocolRegistry registry) {
        long bcopy = config.get(ProtocolConfig.BCOPY_THRESH);
        long zcopy = config.get(ProtocolConfig.ZCOPY_THRESH);
        long rndv = config.get(ProtocolConfig.RNDV_THRESH);
        RndvScheme scheme = config.get(ProtocolConfig.RNDV_SCHEME);
        return new ProtocolSettings(config.get(ProtocolConfig.MAX_MSG_SIZE),
                bcopy < 0 ? ProtoCandidate.AUTO : bcopy,
                zcopy < 0 ? ProtoCandidate.AUTO : zcopy == Long.MAX_VALUE ? ProtoCandidate.DISABLED : zcopy,
                rndv < 0 ? ProtoCandidate.AUTO : rndv, config.get(ProtocolConfig.PROTO_INFO), scheme,
                enabled(listed(config, registry.protocols()), scheme), profile(config),
                config.get(ProtocolConfig.EAGER_MAX));
    }

    /** The profile NUCX_PERF_PROFILE names, read now: a file that cannot be used stops start-up, saying why. */
    private static PerfProfile profile(NucxConfig config) {
        String path = config.get(ProtocolConfig.PERF_PROFILE);
        if (path.isEmpty()) {
            return PerfProfile.NONE;
        }
        try {
            return PerfProfile.read(Path.of(path));
        } catch (IllegalArgumentException e) {
            throw config.invalid(ProtocolConfig.PERF_PROFILE, e.getMessage());
        }
    }

    /**
     * Leaves out the rendezvous variants the scheme's receivers never run: put/zcopy unless put_zcopy, get/zcopy with
     * put_zcopy, both with am. The receiver decides the data protocol; the sender's table only says which RTS to send.
     */
    private static List<Protocol> enabled(List<Protocol> listed, RndvScheme scheme) {
        return listed.stream().filter(p -> switch (scheme) {
            case AUTO, GET_ZCOPY -> p != RndvProtocols.PUT_ZCOPY;
            case PUT_ZCOPY -> p != RndvProtocols.GET_ZCOPY;
            case AM -> p != RndvProtocols.PUT_ZCOPY && p != RndvProtocols.GET_ZCOPY;
        }).toList();
    }

    /**
     * {@code all} filtered by NUCX_PROTOS: "all", names or globs ({@code egr/*}), or {@code ^...} to exclude. A name
     * that matches no protocol is refused, naming the setting.
     */
    private static List<Protocol> listed(NucxConfig config, List<Protocol> all) {
        String spec = config.get(ProtocolConfig.PROTOS);
        if (spec.equals("all")) {
            return all;
        }
        boolean exclude = spec.startsWith("^");
        List<Pattern> patterns = new ArrayList<>();
        for (String part : (exclude ? spec.substring(1) : spec).split(",")) {
            String glob = part.trim();
            Pattern re = Pattern.compile(Pattern.quote(glob).replace("*", "\\E.*\\Q"));
            if (all.stream().noneMatch(p -> re.matcher(p.name()).matches())) {
                throw config.invalid(ProtocolConfig.PROTOS, "'" + glob + "' matches no protocol; known: "
                        + all.stream().map(Protocol::name).toList());
            }
            patterns.add(re);
        }
        List<Protocol> out = new ArrayList<>();
        for (Protocol p : all) {
            if (patterns.stream().anyMatch(re -> re.matcher(p.name()).matches()) != exclude) {
                out.add(p);
            }
        }
        return out;
    }
}
