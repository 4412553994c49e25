package io.nucx.transport.cma;

import io.nucx.transport.testsuite.Patterns;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;

/**
 * The other process of {@link CmaTest}: exposes a native region filled with {@link Patterns#pattern}, prints its
 * remote key, then answers {@code CHECK offset length seed} (is that range the pattern of that seed?) until EXIT.
 */
public final class CmaPeer {
    public static void main(String[] args) throws Exception {
        long size = Long.parseLong(args[0]);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment region = arena.allocate(size, 4096);
            Patterns.fill(region, 0, 1);
            System.out.println("KEY " + HexFormat.of().formatHex(CmaKey.of(region).pack()));
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            for (String line; (line = in.readLine()) != null && !line.equals("EXIT"); ) {
                String[] f = line.split(" ");
                long offset = Long.parseLong(f[1]);
                long length = Long.parseLong(f[2]);
                int seed = Integer.parseInt(f[3]);
                long bad = Patterns.firstMismatch(region.asSlice(offset, length), offset, seed);
                System.out.println(bad < 0 ? "OK" : "BAD " + bad);
                System.out.flush();
            }
        }
    }
}
