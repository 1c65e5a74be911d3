# metatune_allocator: the allocator metatune's executables (the CLI, the benchmarks) link.
#
# The search allocates and frees small IR nodes by the million (every sample replays a trace
# into a fresh schedule): with glibc's malloc a third of the search's time went to malloc,
# free and their consolidation (perf on bench/sampling), and the sampling threads contend on
# its arenas. jemalloc (Debian libjemalloc-dev, installed by scripts/setup.sh) cuts a sample's
# CPU time by about a quarter (bench/sampling/README.md). Only executables link it: a library
# must not choose the allocator of the application that embeds it, so an embedding
# application gets the same speed by linking jemalloc (or tcmalloc, mimalloc) itself.
option(METATUNE_JEMALLOC "Link metatune's executables with jemalloc when it is installed" ON)
add_library(metatune_allocator INTERFACE)
set(METATUNE_ALLOCATOR "system malloc")
if(METATUNE_JEMALLOC)
  find_library(METATUNE_JEMALLOC_LIBRARY NAMES jemalloc)
  if(METATUNE_JEMALLOC_LIBRARY)
    # Nothing calls jemalloc by name: --no-as-needed keeps the library, whose malloc and free
    # then come before libc's in symbol lookup.
    target_link_libraries(metatune_allocator INTERFACE
      "-Wl,--push-state,--no-as-needed" ${METATUNE_JEMALLOC_LIBRARY} "-Wl,--pop-state")
    set(METATUNE_ALLOCATOR "jemalloc")
  else()
    message(WARNING "jemalloc not found (Debian: libjemalloc-dev, scripts/setup.sh installs "
                    "it): metatune's executables use the system allocator, and the search "
                    "samples about a quarter slower")
  endif()
endif()
message(STATUS "metatune executables allocate with: ${METATUNE_ALLOCATOR}")
