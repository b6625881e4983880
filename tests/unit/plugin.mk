# unit tests of the plugin module
