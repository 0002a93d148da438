# frozen_string_literal: true

require "digest"

# A least-recently-used cache with optional expiry.
module Caching
  DEFAULT_SIZE = 128

  class Error < StandardError; end

  # Keeps at most +size+ entries.
  class LRU
    include Enumerable

    attr_reader :size

    def initialize(size = DEFAULT_SIZE)
      @size = size
      @store = {}
    end

    def [](key)
      return nil unless @store.key?(key)

      @store[key] = @store.delete(key)
    end

    def []=(key, value)
      @store.delete(key)
      @store[key] = value
      @store.shift while @store.length > @size
    end

    def each(&block)
      @store.each(&block)
    end

    def self.digest(value)
      Digest::SHA256.hexdigest(value.to_s)
    end

    class << self
      def build(**options)
        new(options.fetch(:size, DEFAULT_SIZE))
      end
    end

    private

    def evict!
      @store.shift
    end
  end
end

def cached(key)
  yield key
end
