/*
 * arena_version.h - the project's version, shared by arenad, arenactl and
 * the client library.
 */
#ifndef ARENA_VERSION_H
#define ARENA_VERSION_H

#define ARENA_VERSION "0.1.0"

#endif
