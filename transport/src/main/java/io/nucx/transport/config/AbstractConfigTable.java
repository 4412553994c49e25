package io.nucx.transport.config;

import java.util.List;

/** A table declared by a title, a rank and its entries; a layer's declaration class extends it. */
public abstract class AbstractConfigTable implements ConfigTable {

    private final String title;
    private final int rank;
    private final List<ConfigEntry<?>> entries;

    protected AbstractConfigTable(String title, int rank, ConfigEntry<?>... entries) {
        this.title = title;
        this.rank = rank;
        this.entries = List.of(entries);
    }

    @Override
    public final String title() {
        return title;
    }

    @Override
    public final int rank() {
        return rank;
    }

    @Override
    public final List<ConfigEntry<?>> entries() {
        return entries;
    }
}
