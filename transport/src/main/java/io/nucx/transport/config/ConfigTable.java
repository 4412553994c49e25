package io.nucx.transport.config;

import io.nucx.transport.NucxConfig;

import java.util.List;

/**
 * One layer's settings (UCX's config tables, registered per component): the transport layer's, each transport's
 * (through {@code Transport.configTable()}), the protocols', the worker's. Tables are found by
 * {@link java.util.ServiceLoader} ({@code META-INF/services/io.nucx.transport.config.ConfigTable}) and through the
 * transports; {@link ConfigSchema} puts them together, and docs/CONFIG.md is generated from them.
 */
public interface ConfigTable {

    /** A table with no settings (a transport with nothing to configure). */
    ConfigTable EMPTY = new ConfigTable() {
        @Override
        public String title() {
            return "nothing";
        }

        @Override
        public List<ConfigEntry<?>> entries() {
            return List.of();
        }
    };

    /** The section title in the docs, e.g. "tcp transport". */
    String title();

    /** The ranks of the layers' tables, in the order the docs list them. */
    int RANK_TRANSPORT_LAYER = 0;
    int RANK_TRANSPORT = 10;
    int RANK_PROTOCOL = 20;
    int RANK_WORKER = 30;

    /** Where the table stands among the others in the docs ({@code RANK_*}); ties go by title. */
    default int rank() {
        return RANK_TRANSPORT;
    }

    /** The settings, in the order the docs list them. */
    List<ConfigEntry<?>> entries();

    /**
     * Checks that involve more than one setting, once every value has parsed (Aeron's {@code Context.conclude()});
     * throws {@code config.invalid(...)} naming the setting at fault.
     */
    default void conclude(NucxConfig config) {
    }
}
