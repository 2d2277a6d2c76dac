// A module declaration using every directive; `jar --main-class` adds ModuleMainClass
// and ModulePackages to the compiled module-info.class.
module kitchen.mod {
    requires java.logging;
    requires static transitive java.sql;
    exports p;
    opens p to java.base;
    uses java.lang.Runnable;
    provides java.lang.Runnable with p.Main;
}
