// Being implemented (helper): placeholder so the tree builds.
