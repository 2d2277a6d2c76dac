// Writes JsrRet.class (version 45.3, JDK 1.1) with jsr/ret subroutines, which modern
// javac no longer emits.
// Run: java -cp /usr/share/java/asm.jar GenJsrRet.java OUT_DIR
import java.nio.file.*;
import org.objectweb.asm.*;

public class GenJsrRet implements Opcodes {
    public static void main(String[] args) throws Exception {
        ClassWriter cw = new ClassWriter(0);
        cw.visit(V1_1, ACC_PUBLIC | ACC_SUPER, "JsrRet", null, "java/lang/Object", null);

        MethodVisitor init = cw.visitMethod(ACC_PUBLIC, "<init>", "()V", null, null);
        init.visitCode();
        init.visitVarInsn(ALOAD, 0);
        init.visitMethodInsn(INVOKESPECIAL, "java/lang/Object", "<init>", "()V", false);
        init.visitInsn(RETURN);
        init.visitMaxs(1, 1);
        init.visitEnd();

        // Two call sites of one subroutine.
        MethodVisitor f = cw.visitMethod(ACC_PUBLIC | ACC_STATIC, "twoCalls", "(I)I", null, null);
        f.visitCode();
        Label neg = new Label(), sub = new Label();
        f.visitVarInsn(ILOAD, 0);
        f.visitJumpInsn(IFLE, neg);
        f.visitJumpInsn(JSR, sub);
        f.visitVarInsn(ILOAD, 0);
        f.visitInsn(IRETURN);
        f.visitLabel(neg);
        f.visitJumpInsn(JSR, sub);
        f.visitInsn(ICONST_M1);
        f.visitInsn(IRETURN);
        f.visitLabel(sub);
        f.visitVarInsn(ASTORE, 1);
        f.visitIincInsn(0, 1);
        f.visitVarInsn(RET, 1);
        f.visitMaxs(1, 2);
        f.visitEnd();

        // try/finally as javac 1.3 compiled it: the finally body is a subroutine.
        MethodVisitor g = cw.visitMethod(ACC_PUBLIC | ACC_STATIC, "tryFinally", "(I)I", null, null);
        g.visitCode();
        Label start = new Label(), end = new Label(), handler = new Label(), fin = new Label(), out = new Label();
        g.visitTryCatchBlock(start, end, handler, null);
        g.visitInsn(ICONST_0);
        g.visitVarInsn(ISTORE, 1);
        g.visitLabel(start);
        g.visitVarInsn(ILOAD, 0);
        g.visitInsn(ICONST_2);
        g.visitInsn(IDIV);
        g.visitVarInsn(ISTORE, 1);
        g.visitJumpInsn(JSR, fin);
        g.visitLabel(end);
        g.visitJumpInsn(GOTO, out);
        g.visitLabel(handler);
        g.visitVarInsn(ASTORE, 2);
        g.visitJumpInsn(JSR, fin);
        g.visitVarInsn(ALOAD, 2);
        g.visitInsn(ATHROW);
        g.visitLabel(fin);
        g.visitVarInsn(ASTORE, 3);
        g.visitIincInsn(1, 1);
        g.visitVarInsn(RET, 3);
        g.visitLabel(out);
        g.visitVarInsn(ILOAD, 1);
        g.visitInsn(IRETURN);
        g.visitMaxs(2, 4);
        g.visitEnd();

        wideRet(cw);
        cw.visitEnd();
        Files.write(Paths.get(args[0], "JsrRet.class"), cw.toByteArray());
    }

    // A return address in a local above 255: wide astore / wide ret.
    static void wideRet(ClassWriter cw) {
        MethodVisitor w = cw.visitMethod(ACC_PUBLIC | ACC_STATIC, "wideRet", "()V", null, null);
        w.visitCode();
        Label wsub = new Label();
        w.visitJumpInsn(JSR, wsub);
        w.visitInsn(RETURN);
        w.visitLabel(wsub);
        w.visitVarInsn(ASTORE, 290);
        w.visitVarInsn(RET, 290);
        w.visitMaxs(1, 291);
        w.visitEnd();
    }
}
