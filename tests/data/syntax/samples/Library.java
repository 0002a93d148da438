package org.example.library;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** A lending library: books, members and loans. */
public class Library {
    public static final int MAX_LOANS = 5;

    /** One book on the shelf. */
    public record Book(String isbn, String title) {}

    public interface Catalog {
        Optional<Book> find(String isbn);
    }

    public enum Status { AVAILABLE, ON_LOAN, LOST }

    private final List<Book> books = new ArrayList<>();
    private final Catalog catalog;

    public Library(Catalog catalog) {
        this.catalog = catalog;
    }

    /**
     * Adds a book found in the catalog.
     */
    public boolean add(String isbn) {
        return catalog.find(isbn).map(books::add).orElse(false);
    }

    public boolean add(Book book) {
        return books.add(book);
    }

    @Override
    public String toString() {
        return "Library(" + books.size() + " books)";
    }

    static <T extends Comparable<T>> T max(List<T> items) {
        T best = null;
        for (T item : items) {
            if (best == null || item.compareTo(best) > 0) {
                best = item;
            }
        }
        return best;
    }

    private static class Loan {
        final Book book;
        Loan(Book book) { this.book = book; }
    }
}

@interface Audited {
    String value() default "";
}
