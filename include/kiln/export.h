/* Symbol visibility for the public API. */
#ifndef KILN_EXPORT_H
#define KILN_EXPORT_H

#if defined(KILN_BUILDING_LIBRARY) && defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#if defined(__GNUC__)
#define KILN_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KILN_PRINTF(fmt, args)
#endif

#endif
