library(testthat)
library(h5turbo)

test_check("h5turbo")
