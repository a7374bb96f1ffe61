#ifndef REEL_CREELBUILD_BUILD_H
#define REEL_CREELBUILD_BUILD_H
/* What scripts/install and scripts/package stamp into a build with
 *   swift build -Xcc -DREEL_VERSION='"1.2.3"' -Xcc -DREEL_COMMIT='"abc…"' -Xcc -DREEL_BUILT_WITH='"xcb 1.15"'
 * (a Swift -D carries no value; a C macro does, and the clang importer compiles these inline
 * functions with the flags of the build). A plain `swift build` gets the fallbacks. */
#ifndef REEL_VERSION
#define REEL_VERSION "0.0.0-dev"
#endif
#ifndef REEL_COMMIT
#define REEL_COMMIT "unknown commit"
#endif
#ifndef REEL_BUILT_WITH
#define REEL_BUILT_WITH ""
#endif
static inline const char *reel_build_version(void) { return REEL_VERSION; }
static inline const char *reel_build_commit(void) { return REEL_COMMIT; }
static inline const char *reel_build_built_with(void) { return REEL_BUILT_WITH; }
#endif
