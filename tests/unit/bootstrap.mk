# unit tests of the bootstrap module
