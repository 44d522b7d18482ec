/* Shared by the C tests. */
#ifndef H5TURBO_TEST_COMMON_H
#define H5TURBO_TEST_COMMON_H
#include <h5turbo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#endif
