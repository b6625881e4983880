# unit tests of the sockets module
